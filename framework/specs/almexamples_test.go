package specs_test

import (
	"strings"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

func TestALMExamplesOfTheWidgetBundle(t *testing.T) {
	samples, err := specs.ALMExamples(bundles.Dir("widget-operator", "v0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	got := samples("ns-a")
	if len(got) != 2 {
		t.Fatalf("got %d samples, want the CSV's Widget and WidgetClass", len(got))
	}
	widget, class := got[0], got[1]
	if widget.GetKind() != "Widget" || widget.GetName() != "widget-sample" || widget.GetNamespace() != "ns-a" {
		t.Errorf("Widget (namespaced) = %s %s/%s, want Widget ns-a/widget-sample", widget.GetKind(), widget.GetNamespace(), widget.GetName())
	}
	if color := widget.Object["spec"].(map[string]any)["data"].(map[string]any)["color"]; color != "blue" {
		t.Errorf("Widget spec.data.color = %v, want the CSV's blue", color)
	}
	if class.GetKind() != "WidgetClass" || class.GetName() != "widgetclass-sample" || class.GetNamespace() != "" {
		t.Errorf("WidgetClass (cluster-scoped) = %s %q/%s, want no namespace", class.GetKind(), class.GetNamespace(), class.GetName())
	}

	// Each call is fresh: the specs rename and mutate what they get.
	widget.SetName("changed")
	if again := samples("ns-b")[0]; again.GetName() != "widget-sample" || again.GetNamespace() != "ns-b" {
		t.Errorf("second call = %s/%s, want ns-b/widget-sample untouched by the first caller", again.GetNamespace(), again.GetName())
	}
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
`

func TestALMExamplesErrorsNameTheCSVAndTheAnnotation(t *testing.T) {
	csv := func(annotation string) string {
		out := "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: test-operator.v0.1.0\n"
		if annotation != "" {
			out += "  annotations:\n    alm-examples: '" + annotation + "'\n"
		}
		return out
	}
	for _, tc := range []struct {
		name, annotation, want string
	}{
		{"missing", "", "is missing"},
		{"not JSON", `[{"kind": `, "not a JSON array of objects"},
		{"not an array", `{"kind": "Widget"}`, "not a JSON array of objects"},
		{"an entry that is not an object", `["Widget"]`, "[0] is string, not an object"},
		{"empty", `[]`, "empty array"},
		{"no name", `[{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}}]`, "needs apiVersion, kind and metadata.name"},
		{"a kind the bundle does not define", `[{"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}]`,
			"[0]: Gadget g (example.com/v1): no CRD of the bundle defines this kind"},
		{"a version the CRD does not serve", `[{"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"}}]`,
			"CRD widgets.example.com does not serve version v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeBundle(t, csv(tc.annotation), widgetCRD)
			_, err := specs.ALMExamples(dir)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, want := range []string{dir, "CSV test-operator.v0.1.0", "metadata.annotations[alm-examples]", tc.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}
