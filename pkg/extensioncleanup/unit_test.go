package extensioncleanup

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestMode(t *testing.T) {
	for _, tc := range []struct {
		annotations map[string]string
		mode        string
		invalid     bool
	}{
		{nil, "", false},
		{map[string]string{UninstallAnnotation: ""}, "", false},
		{map[string]string{UninstallAnnotation: ModeDeleteOperands}, ModeDeleteOperands, false},
		{map[string]string{UninstallAnnotation: ModeOrphan}, ModeOrphan, false},
		{map[string]string{UninstallAnnotation: "Delete-Operands"}, "", true},
		{map[string]string{UninstallAnnotation: "true"}, "", true},
	} {
		ce := &unstructured.Unstructured{}
		ce.SetAnnotations(tc.annotations)
		m, invalid := mode(ce)
		if m != tc.mode || (invalid != "") != tc.invalid {
			t.Errorf("annotations %v: mode %q, invalid %q; want %q, invalid %t", tc.annotations, m, invalid, tc.mode, tc.invalid)
		}
	}
}

// The plan refuses what the extension does not own and namespaces its operator does not watch.
func TestPlanAllows(t *testing.T) {
	widget := schema.GroupKind{Group: "fixtures.cleanup-e2e.io", Kind: "Widget"}
	cluster := schema.GroupKind{Group: "fixtures.cleanup-e2e.io", Kind: "WidgetClass"}
	other := schema.GroupKind{Group: "example.com", Kind: "Thing"}
	all := &plan{allowed: map[schema.GroupKind]bool{widget: true, cluster: false}, all: true}
	one := &plan{allowed: map[schema.GroupKind]bool{widget: true, cluster: false}, namespaces: []string{"team-a"}}
	for _, tc := range []struct {
		p    *plan
		gk   schema.GroupKind
		ns   string
		want bool
	}{
		{all, widget, "anywhere", true},
		{all, widget, "", false},
		{all, cluster, "", true},
		{all, other, "team-a", false},
		{one, widget, "team-a", true},
		{one, widget, "team-b", false},
		{one, cluster, "", false},
	} {
		err := tc.p.Allows(tc.gk, tc.ns)
		if (err == nil) != tc.want {
			t.Errorf("plan(all=%t) Allows(%s, %q) = %v; want allowed %t", tc.p.all, tc.gk, tc.ns, err, tc.want)
		}
		if tc.p.Counts(tc.gk, tc.ns, true) != tc.want {
			t.Errorf("Counts must follow Allows for %s in %q", tc.gk, tc.ns)
		}
	}
	if all.key() == one.key() {
		t.Error("plans with other scopes must differ in key (the verification compares them)")
	}
	if !strings.Contains(one.Allows(widget, "team-b").Error(), "team-a") {
		t.Error("the refusal names the watched namespaces")
	}
}
