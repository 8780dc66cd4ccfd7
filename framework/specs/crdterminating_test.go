package specs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A create refused because the CRD is terminating names what keeps the CRD: its custom resources and
// their finalizers.
func TestExplainCRDTerminatingNamesWhatKeepsIt(t *testing.T) {
	gvk := widgetGVK
	crd := widgetCRD()
	crd.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-time.Minute)}
	crd.Finalizers = []string{"customresourcecleanup.apiextensions.k8s.io"}
	stuck := &unstructured.Unstructured{}
	stuck.SetGroupVersionKind(gvk)
	stuck.SetNamespace("team-a")
	stuck.SetName("stuck")
	stuck.SetFinalizers([]string{"fixtures.cleanup-e2e.io/widget-records"})
	c := widgetClient(t, crd, stuck)

	refused := errors.New(`widgets.fixtures.cleanup-e2e.io "sample" is forbidden: create not allowed while custom resource definition is terminating`)
	got := explainCRDTerminating(context.Background(), c, gvk, refused).Error()
	for _, want := range []string{refused.Error(), "CRD widgets.fixtures.cleanup-e2e.io was deleted 1m", "team-a/stuck (finalizers [fixtures.cleanup-e2e.io/widget-records])"} {
		if !strings.Contains(got, want) {
			t.Errorf("explained as %q, want %q in it", got, want)
		}
	}
	if other := errors.New("conflict"); explainCRDTerminating(context.Background(), c, gvk, other) != other {
		t.Error("another error must be returned as it is")
	}
}

var widgetGVK = schema.GroupVersionKind{Group: "fixtures.cleanup-e2e.io", Version: "v1alpha1", Kind: "Widget"}

// widgetCRD is the Widget CRD as a fake client needs it (names, one served storage version).
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.fixtures.cleanup-e2e.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: widgetGVK.Group, Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", ListKind: "WidgetList", Plural: "widgets"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true}}},
	}
}

// widgetClient is a fake client serving CRDs and Widgets, holding objs.
func widgetClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(widgetGVK, meta.RESTScopeNamespace)
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithRESTMapper(mapper).WithObjects(objs...).Build()
}
