package extensioncleanup

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A ClusterExtension "widget" (UID widget-2, armed when armed) that adopted CRDs an earlier one
// (widget-1) orphaned, on a fake API server, and the controller reading and writing it.
var adoptedHolder = metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: DefaultHolderName, UID: "holder"}

func adoptedCRD(name string, annotations map[string]string, refs ...metav1.OwnerReference) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{ownerKindLabel: ClusterExtensionGVK.Kind, OwnerNameLabel: "widget"},
		Annotations: annotations, OwnerReferences: refs}}
}

func adoptedFixture(t *testing.T, armed bool, crds ...client.Object) (*Reconciler, client.Client, *unstructured.Unstructured) {
	t.Helper()
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(ClusterExtensionGVK)
	ce.SetName("widget")
	ce.SetUID("widget-2")
	if armed {
		ce.SetFinalizers([]string{Finalizer})
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(append(crds, ce)...).Build()
	return &Reconciler{opts: Options{}.withDefaults(), client: c, live: c}, c, ce
}

// sweepCRD runs sweepOne on the CRD name as listed, and returns it afterwards.
func sweepCRD(t *testing.T, r *Reconciler, c client.Client, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	o := &metav1.PartialObjectMetadata{}
	o.SetGroupVersionKind(crdGVK)
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, o); err != nil {
		t.Fatal(err)
	}
	if err := r.sweepOne(t.Context(), o, "widget", adoptedHolder); err != nil {
		t.Fatal(err)
	}
	return getCRD(t, c, name)
}

func getCRD(t *testing.T, c client.Client, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

var adoptedMarks = map[string]string{OrphanedFromAnnotation: "widget/widget-1", HeldByAnnotation: "holder"}

// TestSweepLeavesTheHoldOfAnExtensionThatAdoptedAnOrphanedCRD: a CRD an orphan uninstall left keeps its
// mark (cleanup-e2e.io/orphaned-from, the gone ClusterExtension) after a ClusterExtension of the same
// name adopted it; once that one is opted in, the CRD carries its hold. The sweep (at every controller
// start, and for every gone ClusterExtension of the name) must leave that hold alone: dropping it left
// the CRD unheld until the next resync, and a foreground deletion in between hands it to the GC (seen in
// the randomized lifecycle: a restart of the controller, then a deletion).
func TestSweepLeavesTheHoldOfAnExtensionThatAdoptedAnOrphanedCRD(t *testing.T) {
	ceRef := metav1.OwnerReference{APIVersion: ClusterExtensionGVK.GroupVersion().String(), Kind: ClusterExtensionGVK.Kind,
		Name: "widget", UID: "widget-2", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	r, c, _ := adoptedFixture(t, true, adoptedCRD("widgetclasses.fixtures.cleanup-e2e.io", adoptedMarks, ceRef, adoptedHolder))
	after := sweepCRD(t, r, c, "widgetclasses.fixtures.cleanup-e2e.io")
	if refIndex(after.OwnerReferences, adoptedHolder.UID) < 0 || after.Annotations[HeldByAnnotation] != string(adoptedHolder.UID) {
		t.Fatalf("the sweep took the hold of the live, armed ClusterExtension that adopted the orphaned CRD: owner references %v, annotations %v",
			refNames(after.OwnerReferences), after.Annotations)
	}
}

// TestSweepLeavesTheHoldOfAnAdoptedCRDTheGCStripped: the same adopted CRD, its ClusterExtension armed and
// deleted in foreground, the GC having stripped its reference: the sweep (at a controller restart) must
// leave the holder's reference, or the release finds nothing to give back.
func TestSweepLeavesTheHoldOfAnAdoptedCRDTheGCStripped(t *testing.T) {
	r, c, _ := adoptedFixture(t, true, adoptedCRD("widgets.fixtures.cleanup-e2e.io", adoptedMarks, adoptedHolder))
	if after := sweepCRD(t, r, c, "widgets.fixtures.cleanup-e2e.io"); refIndex(after.OwnerReferences, adoptedHolder.UID) < 0 {
		t.Fatalf("the sweep took the hold of the armed ClusterExtension that adopted the CRD: owner references %v", refNames(after.OwnerReferences))
	}
}

// TestReleaseGivesBackAnAdoptedCRDTheGCStripped: that CRD released (the user opted out, or delete-operands
// completed) must get this ClusterExtension's reference back, as any other held object does; listed as
// the earlier one's leftover, it kept only the holder's, which the sweep then dropped, and the CRD was
// left with no owner (the randomized lifecycle, seed 305: invariant 6). A legacy orphan's pair (the
// holder's references without the held-by mark) is not this ClusterExtension's.
func TestReleaseGivesBackAnAdoptedCRDTheGCStripped(t *testing.T) {
	adopted := adoptedCRD("widgets.fixtures.cleanup-e2e.io", adoptedMarks, adoptedHolder)
	legacy := adoptedCRD("gadgets.fixtures.cleanup-e2e.io", map[string]string{OrphanedFromAnnotation: "widget/widget-1"}, adoptedHolder, adoptedHolder)
	r, c, ce := adoptedFixture(t, false, adopted, legacy)
	if _, _, err := r.release(t.Context(), ce, adoptedHolder.UID, false); err != nil {
		t.Fatal(err)
	}
	if got := getCRD(t, c, adopted.Name); len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != ce.GetUID() || got.Annotations[HeldByAnnotation] != "" {
		t.Errorf("the adopted CRD after the release: owner references %v, annotations %v; want the ClusterExtension's reference alone, no held-by mark",
			refNames(got.OwnerReferences), got.Annotations)
	}
	if got := getCRD(t, c, legacy.Name); len(got.OwnerReferences) != 2 {
		t.Errorf("a legacy orphan's pair was released as this ClusterExtension's: owner references %v", refNames(got.OwnerReferences))
	}
}

// TestSweepDropsALegacyOrphansPair: an orphaned CRD an earlier version of the controller left with the
// holder's pair of references (no held-by mark) is the user's: the sweep drops the pair, so that a new
// ClusterExtension of the name can adopt it (helm's patch would meet two controller references).
func TestSweepDropsALegacyOrphansPair(t *testing.T) {
	pair := adoptedHolder
	pair.Controller = ptr.To(true)
	r, c, _ := adoptedFixture(t, true, adoptedCRD("gadgets.fixtures.cleanup-e2e.io", map[string]string{OrphanedFromAnnotation: "widget/widget-1"}, adoptedHolder, pair))
	if after := sweepCRD(t, r, c, "gadgets.fixtures.cleanup-e2e.io"); len(after.OwnerReferences) != 0 {
		t.Fatalf("a legacy orphan's pair after the sweep: owner references %v; want none", refNames(after.OwnerReferences))
	}
}
