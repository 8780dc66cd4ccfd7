package extensioncleanup_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// TestACRDAnotherExtensionReferencesIsLeftInPlace: a CRD another ClusterExtension also references
// outlives this one (the garbage collector only drops this one's reference), and so do its CRs, which
// the other extension's operator serves: a delete-operands uninstall deletes none of them and lets its
// operator go.
func TestACRDAnotherExtensionReferencesIsLeftInPlace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := setup(ctx, t, extensioncleanup.ModeDeleteOperands, fast)
	expectHeld(ctx, t, e)
	// Its package is not in the catalog: operator-controller never installs it, the object is enough
	// for the garbage collector to keep the CRD.
	other := olmv1.ClusterExtension("widget-too", installNS, installer, "no-such-package", "0.0.1")
	if err := e.c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	otherRef := metav1.OwnerReference{APIVersion: extensioncleanup.ClusterExtensionGVK.GroupVersion().String(),
		Kind: extensioncleanup.ClusterExtensionGVK.Kind, Name: other.GetName(), UID: other.GetUID()}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := e.crd(ctx, t)
		crd.OwnerReferences = append(crd.OwnerReferences, otherRef)
		return e.c.Update(ctx, crd)
	})
	if err != nil {
		t.Fatalf("CRD %s referencing ClusterExtension %s too: %v", widgetCRD, other.GetName(), err)
	}

	deleted := e.deleteCE(ctx, t, metav1.DeletePropagationBackground)
	e.waitSettled(ctx, t, deleted)
	err = intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		crd := e.crd(ctx, t)
		if crd == nil || crd.DeletionTimestamp != nil {
			return true, ""
		}
		mine := slices.ContainsFunc(crd.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == e.ce.GetUID() })
		return !mine, fmt.Sprintf("CRD %s still references the deleted ClusterExtension: %v", widgetCRD, crd.OwnerReferences)
	})
	if err != nil {
		t.Fatalf("the garbage collector to drop the deleted ClusterExtension's reference: %v", err)
	}
	if crd := e.crd(ctx, t); crd == nil || crd.DeletionTimestamp != nil {
		t.Fatalf("CRD %s deleted although ClusterExtension %s references it (it is %v)", widgetCRD, other.GetName(), crd)
	}
	for _, w := range e.widgets {
		expectUntouched(ctx, t, e, w)
	}
	if err := e.c.Get(ctx, types.NamespacedName{Name: other.GetName()}, other); err != nil {
		t.Errorf("ClusterExtension %s: %v", other.GetName(), client.IgnoreNotFound(err))
	}
}
