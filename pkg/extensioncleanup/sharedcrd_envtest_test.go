package extensioncleanup_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	other := alsoReferencedBy(ctx, t, e, "widget-too")

	deleted := e.deleteCE(ctx, t, metav1.DeletePropagationBackground)
	e.waitSettled(ctx, t, deleted)
	err := intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
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

// TestACRDClaimedMidUninstallKeepsTheOperatorForTheCRsItDeleted: another ClusterExtension references the
// CRD only once the uninstall has deleted its CRs, one of them still Terminating (a foreign finalizer).
// From then on none is deleted, but the one being deleted keeps the operator: the other extension may let
// the CRD go before its operator finalizes it. The uninstall ends once it is gone.
func TestACRDClaimedMidUninstallKeepsTheOperatorForTheCRsItDeleted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := setup(ctx, t, extensioncleanup.ModeDeleteOperands, fast)
	expectHeld(ctx, t, e)
	const foreign = "example.cleanup-e2e.io/foreign"
	blocked := e.widgets[0]
	mustAddFinalizer(ctx, t, e, blocked, foreign)
	deleted := e.deleteCE(ctx, t, metav1.DeletePropagationBackground)
	e.waitCondition(ctx, t, extensioncleanup.ReasonStalled, extensioncleanup.ReasonWaitingOnCleanup)

	other := alsoReferencedBy(ctx, t, e, "widget-claims-late")
	var last metav1.Condition
	waitFor(ctx, t, "the uninstall's condition to name the CRD another ClusterExtension claims", func() (bool, string) {
		c := e.condition(ctx)
		if c == nil {
			return false, "no condition"
		}
		last = *c
		return strings.Contains(c.Message, "another ClusterExtension"), c.Reason + ": " + c.Message
	})
	if last.Reason != extensioncleanup.ReasonStalled && last.Reason != extensioncleanup.ReasonWaitingOnCleanup {
		t.Fatalf("once another ClusterExtension claims the CRD, the uninstall %s: %s; want it still waiting for Widget %s, which it deleted and which is still Terminating",
			last.Reason, last.Message, blocked.GetName())
	}
	if !strings.Contains(last.Message, blocked.GetName()) {
		t.Errorf("the condition does not name the Widget it waits for (%s): %s", blocked.GetName(), last.Message)
	}
	removeFinalizer(ctx, t, e, blocked, foreign)
	e.waitSettled(ctx, t, deleted)
	if err := e.c.Get(ctx, types.NamespacedName{Name: other.GetName()}, other); err != nil {
		t.Errorf("ClusterExtension %s: %v", other.GetName(), client.IgnoreNotFound(err))
	}
}

// alsoReferencedBy creates ClusterExtension name, whose package is not in the catalog (operator-controller
// never installs it: the object is enough for the garbage collector to keep the CRD), and adds its
// reference to the Widget CRD.
func alsoReferencedBy(ctx context.Context, t *testing.T, e *env, name string) *unstructured.Unstructured {
	t.Helper()
	other := olmv1.ClusterExtension(name, installNS, installer, "no-such-package", "0.0.1")
	if err := e.c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	ref := metav1.OwnerReference{APIVersion: extensioncleanup.ClusterExtensionGVK.GroupVersion().String(),
		Kind: extensioncleanup.ClusterExtensionGVK.Kind, Name: other.GetName(), UID: other.GetUID()}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := e.crd(ctx, t)
		crd.OwnerReferences = append(crd.OwnerReferences, ref)
		return e.c.Update(ctx, crd)
	})
	if err != nil {
		t.Fatalf("CRD %s referencing ClusterExtension %s too: %v", widgetCRD, other.GetName(), err)
	}
	return other
}
