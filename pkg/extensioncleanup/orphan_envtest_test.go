package extensioncleanup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// TestOrphanAndReinstall: opted in with orphan, the ClusterExtension deleted (background, the default):
// the CRDs stay, in the end without an owner reference, every Widget stays undeleted; the operator and
// its RBAC go. A ClusterExtension of the same name then
// installs again and adopts the CRDs (helm's ownership annotations still name its release).
func TestOrphanAndReinstall(t *testing.T) {
	t.Parallel()
	orphanAndReinstall(t, metav1.DeletePropagationBackground)
}

// TestOrphanForegroundAndReinstall: the same with kubectl delete --cascade=foreground.
func TestOrphanForegroundAndReinstall(t *testing.T) {
	t.Parallel()
	orphanAndReinstall(t, metav1.DeletePropagationForeground)
}

func orphanAndReinstall(t *testing.T, policy metav1.DeletionPropagation) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := setup(ctx, t, extensioncleanup.ModeOrphan, fast)
	deleted := e.deleteCE(ctx, t, policy)
	e.waitSettled(ctx, t, deleted)

	// The orphan release leaves the CRD with no owner reference (the orphan guard keeps it so).
	var crd *apiextensionsv1.CustomResourceDefinition
	waitFor(ctx, t, "the orphaned CRD without owner references", func() (bool, string) {
		crd = e.crd(ctx, t)
		if crd == nil {
			return false, "CRD gone"
		}
		return len(crd.OwnerReferences) == 0, fmt.Sprintf("ownerReferences %+v", crd.OwnerReferences)
	})
	if crd.DeletionTimestamp != nil {
		t.Fatalf("CRD %s orphaned: want it kept, it is being deleted", widgetCRD)
	}
	t.Logf("orphaned CRD %s: labels %v, annotations %v", widgetCRD, crd.Labels, crd.Annotations)
	// operator-controller, late, for the gone ClusterExtension (a reconcile that read it before it went):
	// refused by the orphan guard, or the GC would delete the CRD and every Widget at once.
	err := e.c.Patch(ctx, crd.DeepCopy(), lateOperatorControllerPatch(ceName, string(e.ce.GetUID())))
	if err == nil {
		t.Errorf("a late operator-controller patch gave the orphaned CRD %s back to the gone ClusterExtension %s; want it refused by the orphan guard %s", widgetCRD, e.ce.GetUID(), extensioncleanup.OrphanGuardName)
		time.Sleep(time.Second) // the GC deletes it within this, and the Widgets below say so
	} else {
		t.Logf("a late operator-controller patch, refused as expected: %v", err)
	}
	if crd = e.crd(ctx, t); crd == nil || crd.DeletionTimestamp != nil {
		t.Fatalf("CRD %s orphaned: want it kept, it is gone or being deleted", widgetCRD)
	}
	for _, w := range e.widgets {
		live := w.DeepCopy()
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(w), live); err != nil || live.GetDeletionTimestamp() != nil {
			t.Errorf("Widget %s/%s under an orphaned CRD: want it kept, got deletionTimestamp %v, error %v", w.GetNamespace(), w.GetName(), live.GetDeletionTimestamp(), err)
		}
	}

	// Reinstall under the same name, not opted in.
	ce := olmv1.ClusterExtension(ceName, installNS, installer, "widget-operator", "0.1.0")
	reinstalled := time.Now()
	if err := e.c.Create(ctx, ce); err != nil {
		t.Fatal(err)
	}
	if err := olmv1.WaitCondition(ctx, e.c, intervals.OLMInstall, ce, "Installed"); err != nil {
		t.Fatalf("a reinstall after an orphan uninstall: %v", err)
	}
	t.Logf("reinstalled: Installed %s after the creation", time.Since(reinstalled).Round(time.Millisecond))
	after := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.c.Get(ctx, types.NamespacedName{Name: widgetCRD}, after); err != nil {
		t.Fatal(err)
	}
	if after.UID != crd.UID {
		t.Errorf("CRD %s: want the orphaned one adopted (UID %s), got UID %s", widgetCRD, crd.UID, after.UID)
	}
	if len(after.OwnerReferences) != 1 || after.OwnerReferences[0].UID != ce.GetUID() {
		t.Errorf("CRD %s adopted: want the new ClusterExtension's reference, got %+v", widgetCRD, after.OwnerReferences)
	}
	if err := kube.WaitDeploymentAvailable(ctx, e.c, e.depKey, intervals.Get(intervals.DeploymentAvailable)); err != nil {
		t.Fatal(err)
	}
	for _, w := range e.widgets {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(w.GroupVersionKind())
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(w), live); err != nil {
			t.Fatal(err)
		}
		if err := widget.Reconciled(ctx, e.c, live); err != nil {
			t.Errorf("Widget %s/%s after the reinstall: %v", w.GetNamespace(), w.GetName(), err)
		}
	}
}

// TestOptOutAfterTheOrphanRelease: opted in with orphan, the ClusterExtension deleted and released (it
// keeps Finalizer for the settle), then the user opts out: the uninstall is OLM v1's own from there, so
// the CRD loses the orphan's mark and the holder's reference, gets the ClusterExtension's back, and goes
// with everything else.
func TestOptOutAfterTheOrphanRelease(t *testing.T) {
	t.Parallel()
	ctx, e := releasedInASettle(t, extensioncleanup.ModeOrphan, metav1.DeletePropagationBackground, extensioncleanup.ReasonOrphaned)
	if crd := e.crd(ctx, t); crd == nil || crd.Annotations[extensioncleanup.OrphanedFromAnnotation] == "" {
		t.Fatalf("released as an orphan: want CRD %s marked %s, got %+v", widgetCRD, extensioncleanup.OrphanedFromAnnotation, crd)
	}
	if !e.optOutIfThere(ctx, t) {
		t.Fatalf("the opt-out inside the settle: the ClusterExtension is gone or no longer carries %s", extensioncleanup.Finalizer)
	}
	e.waitCondition(ctx, t, extensioncleanup.ReasonAborted)
	waitForWithin(ctx, t, intervals.GarbageCollecting, "everything of the extension to go, the CRD too", func() (bool, string) {
		left := e.heldLeft(ctx, t)
		return len(left) == 0 && e.liveCE(ctx) == nil, fmt.Sprint(left)
	})
}

// TestOrphanWaitsForTheGuard: without the orphan guard's binding an orphan uninstall releases nothing
// and says why (CleanupBlocked naming the missing binding and the file to apply): the ClusterExtension
// keeps Finalizer, the CRD keeps its references and no mark. Once the binding is back, the uninstall
// orphans the CRD as usual.
func TestOrphanWaitsForTheGuard(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := setup(ctx, t, extensioncleanup.ModeOrphan, fast)
	binding := guard(t, extensioncleanup.OrphanGuardName)[1]
	if err := e.c.Delete(ctx, binding.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	e.deleteCE(ctx, t, metav1.DeletePropagationBackground)
	c := e.waitCondition(ctx, t, extensioncleanup.ReasonBlocked)
	for _, want := range []string{"nothing released", "ValidatingAdmissionPolicyBinding " + extensioncleanup.OrphanGuardName + " does not exist", "40-orphan-guard.yaml"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("condition %s: %q does not say %q", c.Reason, c.Message, want)
		}
	}
	crd := e.crd(ctx, t)
	if crd == nil || crd.Annotations[extensioncleanup.OrphanedFromAnnotation] != "" || refIndex(crd.OwnerReferences, e.ce.GetUID()) < 0 {
		t.Fatalf("CRD %s while the uninstall waits for the guard: want it unmarked, with the ClusterExtension's reference; got %v", widgetCRD, crd)
	}
	if e.ceGone(ctx) {
		t.Fatal("the ClusterExtension went while its orphan uninstall waited for the guard")
	}
	t.Logf("waits as expected: %s", c.Message)

	if err := e.c.Create(ctx, binding.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the ClusterExtension gone once the guard is back", func() (bool, string) { return e.ceGone(ctx), e.describeCE(ctx) })
	if crd = e.crd(ctx, t); crd == nil || crd.DeletionTimestamp != nil || crd.Annotations[extensioncleanup.OrphanedFromAnnotation] == "" {
		t.Fatalf("CRD %s after the orphan uninstall: want it kept and marked %s, got %v", widgetCRD, extensioncleanup.OrphanedFromAnnotation, crd)
	}
}

func refIndex(refs []metav1.OwnerReference, uid types.UID) int {
	for i, r := range refs {
		if r.UID == uid {
			return i
		}
	}
	return -1
}
