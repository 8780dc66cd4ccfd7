package extensioncleanup

import (
	"time"

	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestSweepLeavesTheHoldOfAnExtensionThatAdoptedAnOrphanedCRD: a CRD an orphan uninstall left keeps its
// mark (cleanup-e2e.io/orphaned-from, the gone ClusterExtension) after a ClusterExtension of the same
// name adopted it; once that one is opted in, the CRD carries its hold. The sweep (at every controller
// start, and for every gone ClusterExtension of the name) must leave that hold alone: dropping it left
// the CRD unheld until the next resync, and a foreground deletion in between hands it to the GC (seen in
// the randomized lifecycle: a restart of the controller, then a deletion).
func TestSweepLeavesTheHoldOfAnExtensionThatAdoptedAnOrphanedCRD(t *testing.T) {
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	holder := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: DefaultHolderName, UID: "holder"}
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(ClusterExtensionGVK)
	ce.SetName("widget")
	ce.SetUID("widget-2")
	ce.SetFinalizers([]string{Finalizer})
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgetclasses.fixtures.cleanup-e2e.io",
		Labels:      map[string]string{ownerKindLabel: ClusterExtensionGVK.Kind, ownerNameLabel: "widget"},
		Annotations: map[string]string{OrphanedFromAnnotation: "widget/widget-1", HeldByAnnotation: "holder"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: ClusterExtensionGVK.GroupVersion().String(), Kind: ClusterExtensionGVK.Kind,
			Name: "widget", UID: "widget-2", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}, holder}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(crd, ce).Build()
	r := &Reconciler{opts: Options{}.withDefaults(), client: c, live: c, goneAt: map[string]time.Time{}}

	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(crdGVK)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(crd), o); err != nil {
		t.Fatal(err)
	}
	if _, err := r.sweepOne(t.Context(), o, "widget", holder); err != nil {
		t.Fatal(err)
	}
	after := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: crd.Name}, after); err != nil {
		t.Fatal(err)
	}
	if refIndex(after.OwnerReferences, holder.UID) < 0 || after.Annotations[HeldByAnnotation] != string(holder.UID) {
		t.Fatalf("the sweep took the hold of the live, armed ClusterExtension that adopted the orphaned CRD: owner references %v, annotations %v",
			refNames(after.OwnerReferences), after.Annotations)
	}
}
