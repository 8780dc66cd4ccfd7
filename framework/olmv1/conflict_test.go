package olmv1

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// operator-controller's conflict message hides helm's reason; the explanation names the metadata that
// differs, with the values helm wants for the ClusterExtension's release.
func TestExplainInstallConflictNamesWhatHelmChecks(t *testing.T) {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	helmMeta := func(ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Labels: map[string]string{helmManagedByLabel: "Helm"},
			Annotations: map[string]string{helmReleaseNameAnnotation: "widget", helmReleaseNSAnnotation: ns}}
	}
	otherNS := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: helmMeta("team-a")}
	otherNS.Name = "widgets.example.com"
	ours := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: helmMeta("widget-system")}
	ours.Name = "gadgets.example.com"
	unlabelled := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "widget-viewer"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(otherNS, ours, unlabelled).Build()
	ce := ClusterExtension("widget", "widget-system", "installer", "widget-operator", "0.1.0")
	conflict := func(kind, name string) string {
		return "error for resolved bundle: " + kind + " '" + name + "' already exists in namespace '' and cannot be managed by operator-controller"
	}
	for _, tc := range []struct {
		name, message string
		want          []string
	}{
		{"another release namespace", conflict("CustomResourceDefinition", "widgets.example.com"), []string{
			"helm refuses to adopt CustomResourceDefinition widgets.example.com into release widget-system/widget",
			`annotation meta.helm.sh/release-namespace is "team-a" (want "widget-system")`, "owner references none", "Another install or a tool left it"}},
		{"no helm metadata", conflict("ClusterRole", "widget-viewer"), []string{
			`label app.kubernetes.io/managed-by is missing (want "Helm")`, `annotation meta.helm.sh/release-name is missing (want "widget")`}},
		{"matching now", conflict("CustomResourceDefinition", "gadgets.example.com"), []string{"changed after the attempt"}},
		{"gone", conflict("CustomResourceDefinition", "gone.example.com"), []string{"is gone now"}},
		{"a kind not known here", conflict("Issuer", "x"), []string{"helm adopts Issuer x only if it has the label app.kubernetes.io/managed-by=Helm"}},
		{"another message", "validating bundle: nope", nil},
	} {
		got := ExplainInstallConflict(context.Background(), c, ce, []metav1.Condition{{Type: "Installed"}, {Type: "Progressing", Message: tc.message}})
		if tc.want == nil && got != "" {
			t.Errorf("%s: want no explanation, got %q", tc.name, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: want %q in the explanation, got %q", tc.name, w, got)
			}
		}
	}
}
