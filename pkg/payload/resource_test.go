package payload

import "testing"

// Issue 13 item 5: the CVO lower-cases the kinds it deletes through typed clients and writes every
// other kind (custom resources) as the manifest does.
func TestResourceStringNamesKindsLikeTheCVO(t *testing.T) {
	for _, tc := range []struct {
		r    Resource
		want string
	}{
		{Resource{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}, `configmap "ns/a"`},
		{Resource{Version: "v1", Kind: "Namespace", Name: "ns"}, `namespace "ns"`},
		{Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "d"}, `deployment "ns/d"`},
		{Resource{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}, `customresourcedefinition "widgets.example.com"`},
		{Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding", Name: "b"}, `clusterrolebinding "b"`},
		{Resource{Group: "example.com", Version: "v1", Kind: "WidgetClass", Name: "x"}, `WidgetClass "x"`},
		{Resource{Group: "config.openshift.io", Version: "v1", Kind: "ClusterOperator", Name: "svcat"}, `ClusterOperator "svcat"`},
		{Resource{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget", Namespace: "ns", Name: "p"}, `PodDisruptionBudget "ns/p"`},
		// Between plain quotes, unescaped, as the CVO's Resource.String (lib/resourcedelete/helper.go).
		{Resource{Group: "example.com", Version: "v1", Kind: "Widget", Namespace: "ns", Name: `a"b\c`}, `Widget "ns/a"b\c"`},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%+v: got %s, want %s", tc.r, got, tc.want)
		}
	}
}
