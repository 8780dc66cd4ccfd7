package extensioncleanup

import (
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
	r := &Reconciler{opts: Options{}.withDefaults(), client: c, live: c}

	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(crdGVK)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(crd), o); err != nil {
		t.Fatal(err)
	}
	if err := r.sweepOne(t.Context(), o, "widget", holder); err != nil {
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

// TestReleaseGivesBackAnAdoptedCRDTheGCStripped: a CRD an earlier ClusterExtension of the name orphaned
// (its mark stays), adopted and held by this one, which is deleted in foreground: the GC strips this
// one's reference beside the holder's. Released (the user opted out, or delete-operands completed), the
// CRD must get this ClusterExtension's reference back, as any other held object does; listed as the
// earlier one's leftover, it kept only the holder's, which the sweep then dropped, and the CRD was left
// with no owner (the randomized lifecycle, seed 305: invariant 6). A legacy orphan's pair (the holder's
// references without the held-by mark) is not this ClusterExtension's.
func TestReleaseGivesBackAnAdoptedCRDTheGCStripped(t *testing.T) {
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	holder := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: DefaultHolderName, UID: "holder"}
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(ClusterExtensionGVK)
	ce.SetName("widget")
	ce.SetUID("widget-2")
	crd := func(name string, annotations map[string]string, refs ...metav1.OwnerReference) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{ownerKindLabel: ClusterExtensionGVK.Kind, ownerNameLabel: "widget"},
			Annotations: annotations, OwnerReferences: refs}}
	}
	adopted := crd("widgets.fixtures.cleanup-e2e.io", map[string]string{OrphanedFromAnnotation: "widget/widget-1", HeldByAnnotation: "holder"}, holder)
	legacy := crd("gadgets.fixtures.cleanup-e2e.io", map[string]string{OrphanedFromAnnotation: "widget/widget-1"}, holder, holder)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(adopted, legacy, ce).Build()
	r := &Reconciler{opts: Options{}.withDefaults(), client: c, live: c}

	if _, _, err := r.release(t.Context(), ce, holder.UID, false); err != nil {
		t.Fatal(err)
	}
	got := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(adopted), got); err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != ce.GetUID() || got.Annotations[HeldByAnnotation] != "" {
		t.Errorf("the adopted CRD after the release: owner references %v, annotations %v; want the ClusterExtension's reference alone, no held-by mark",
			refNames(got.OwnerReferences), got.Annotations)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(legacy), got); err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 2 {
		t.Errorf("a legacy orphan's pair was released as this ClusterExtension's: owner references %v", refNames(got.OwnerReferences))
	}
}

// TestSweepLeavesTheHoldOfAnAdoptedCRDTheGCStripped: the same adopted CRD, its ClusterExtension armed and
// deleted in foreground, the GC having stripped its reference: the sweep (at a controller restart) must
// leave the holder's reference, or the release finds nothing to give back.
func TestSweepLeavesTheHoldOfAnAdoptedCRDTheGCStripped(t *testing.T) {
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
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.fixtures.cleanup-e2e.io",
		Labels:          map[string]string{ownerKindLabel: ClusterExtensionGVK.Kind, ownerNameLabel: "widget"},
		Annotations:     map[string]string{OrphanedFromAnnotation: "widget/widget-1", HeldByAnnotation: "holder"},
		OwnerReferences: []metav1.OwnerReference{holder}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(crd, ce).Build()
	r := &Reconciler{opts: Options{}.withDefaults(), client: c, live: c}
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(crdGVK)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(crd), o); err != nil {
		t.Fatal(err)
	}
	if err := r.sweepOne(t.Context(), o, "widget", holder); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(crd), crd); err != nil {
		t.Fatal(err)
	}
	if refIndex(crd.OwnerReferences, holder.UID) < 0 {
		t.Fatalf("the sweep took the hold of the armed ClusterExtension that adopted the CRD: owner references %v", refNames(crd.OwnerReferences))
	}
}
