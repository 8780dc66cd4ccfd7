package specs

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A CRD an OLM v0 install left is cleared even when the bundle's CRD listed before it is absent (make e2e
// on kind: the widgets CRD of an earlier OLM v0 spec stayed, and OLM v1 refused to install over it).
func TestClearCRDsLooksAtEveryCRDOfTheBundle(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "fixtures.cleanup-e2e.io", Version: "v1alpha1", Kind: "Widget"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	left := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.fixtures.cleanup-e2e.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: gvk.Group, Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", ListKind: "WidgetList", Plural: "widgets"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true}}},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(left).Build()
	x := &Extension{t: FromTesting(t), c: c, crds: []string{"widgetclasses.fixtures.cleanup-e2e.io", left.Name}}
	if err := x.clearCRDs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if crd, err := liveCRD(context.Background(), c, left.Name); err != nil || crd != nil {
		t.Errorf("CRD %s, left by OLM v0 with no custom resource: want it deleted, got %v (error %v)", left.Name, crd, err)
	}
}
