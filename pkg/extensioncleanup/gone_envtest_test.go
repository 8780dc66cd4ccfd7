package extensioncleanup_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// These tests force, without timing luck, states that must never leave an opted-in extension's object
// without any owner reference: an object left with the holder's reference alone once its
// ClusterExtension is gone (the GC strips a gone owner's reference beside a live one), and a reconcile
// of a stale cached copy after the uninstall finished.

// TestSweepGivesHeldObjectsOfAGoneExtensionToTheGC: every held object of a ClusterExtension that went
// while they carried the holder's reference alone is, after the sweep, deleted by the GC; none is left
// without an owner reference.
func TestSweepGivesHeldObjectsOfAGoneExtensionToTheGC(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := setup(ctx, t, extensioncleanup.ModeDeleteOperands, fast)
	e.deleteWidgets(ctx, t)
	e.stop()
	e.deleteCE(ctx, t, metav1.DeletePropagationBackground)
	removeFinalizer(ctx, t, e, e.ce, extensioncleanup.Finalizer) // with the controller down, the holds stay
	waitForWithin(ctx, t, intervals.GarbageCollecting, "the ClusterExtension to go", func() (bool, string) {
		u := e.liveCE(ctx)
		return u == nil, fmt.Sprintf("still there, finalizers %v", finalizersOf(u))
	})
	// The GC strips the gone ClusterExtension's reference beside the live holder's.
	e.waitHolderOnly(ctx, t)

	e.start(ctx, t, fast) // the sweep at start: no ClusterExtension of the name exists
	waitForWithin(ctx, t, intervals.GarbageCollecting, "every held object to go", func() (bool, string) {
		left := e.heldLeft(ctx, t)
		return len(left) == 0, fmt.Sprint(left)
	})
}

// TestStaleCopyOfAFinishedExtensionHoldsNothing: a reconcile of a copy read before the uninstall
// finished (the cache lagging behind the controller's own finish) holds nothing again: the object keeps
// the ClusterExtension's reference alone, and goes with it.
func TestStaleCopyOfAFinishedExtensionHoldsNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const keep = "test.cleanup-e2e.io/keep" // keeps the ClusterExtension after the controller's finish
	e := setup(ctx, t, extensioncleanup.ModeDeleteOperands, fast)
	e.deleteWidgets(ctx, t)
	mustAddFinalizer(ctx, t, e, e.ce, keep)
	e.stop()
	e.deleteCE(ctx, t, metav1.DeletePropagationBackground)
	stale := e.liveCE(ctx)
	if stale == nil || stale.GetDeletionTimestamp() == nil || !slices.Contains(stale.GetFinalizers(), extensioncleanup.Finalizer) {
		t.Fatalf("want the ClusterExtension deleted and held by %s, got %v", extensioncleanup.Finalizer, stale)
	}
	e.start(ctx, t, fast) // no CR left: the uninstall finishes at once (release, then the finalizer off)
	waitForWithin(ctx, t, intervals.GarbageCollecting, "the controller's finish", func() (bool, string) {
		u := e.liveCE(ctx)
		return u != nil && !slices.Contains(u.GetFinalizers(), extensioncleanup.Finalizer), fmt.Sprintf("finalizers %v", finalizersOf(u))
	})
	e.stop()
	waitFor(ctx, t, "the Deployment released to the ClusterExtension alone", func() (bool, string) {
		refs := e.depRefs(ctx, t)
		return len(refs) == 1 && refs[0].UID == e.ce.GetUID(), fmt.Sprintf("ownerReferences %+v", refs)
	})

	mgr, err := ctrl.NewManager(e.p.RESTConfig(), ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := extensioncleanup.ReconcileStale(ctx, mgr, fast, stale)
	t.Logf("reconcile of the stale copy: %+v, %v", res, err)
	if refs := e.depRefs(ctx, t); len(refs) != 1 || refs[0].UID != e.ce.GetUID() {
		t.Errorf("a stale copy of the finished ClusterExtension must hold nothing again; Deployment %s has ownerReferences %+v", e.depKey, refs)
	}
	if err != nil {
		t.Errorf("reconcile of the stale copy: %v", err)
	}

	removeFinalizer(ctx, t, e, e.ce, keep)
	e.start(ctx, t, fast)
	waitForWithin(ctx, t, intervals.GarbageCollecting, "every held object to go", func() (bool, string) {
		left := e.heldLeft(ctx, t)
		return len(left) == 0 && e.liveCE(ctx) == nil, fmt.Sprint(left)
	})
}

// TestReleaseSettlesAcrossARestart: once released, the ClusterExtension keeps Finalizer for gcSettle with
// every held object carrying its reference and not the holder's (a strip the GC began before the release
// then finds it still there, neither waiting nor gone); a controller restarted meanwhile, with no memory
// of the release, lets it go from the condition, and the GC takes everything.
func TestReleaseSettlesAcrossARestart(t *testing.T) {
	t.Parallel()
	ctx, e := releasedInASettle(t, extensioncleanup.ModeDeleteOperands, metav1.DeletePropagationForeground, extensioncleanup.ReasonCompleted)
	e.stop()
	u := e.liveCE(ctx)
	if u == nil || !slices.Contains(u.GetFinalizers(), extensioncleanup.Finalizer) {
		t.Fatalf("released: want the ClusterExtension kept by %s for the settle, got finalizers %v", extensioncleanup.Finalizer, finalizersOf(u))
	}
	if slices.Contains(u.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		t.Errorf("released: %s still on the ClusterExtension: the GC still strips its references", metav1.FinalizerDeleteDependents)
	}
	if refs := e.depRefs(ctx, t); len(refs) != 1 || refs[0].UID != e.ce.GetUID() {
		t.Errorf("released: want Deployment %s owned by the ClusterExtension alone, got ownerReferences %+v", e.depKey, refs)
	}
	e.start(ctx, t, fast)
	waitForWithin(ctx, t, intervals.GarbageCollecting, "every held object to go after the restart", func() (bool, string) {
		left := e.heldLeft(ctx, t)
		return len(left) == 0 && e.liveCE(ctx) == nil, fmt.Sprintf("ClusterExtension finalizers %v; left %v", finalizersOf(e.liveCE(ctx)), left)
	})
}

// deleteWidgets deletes every Widget and waits until the running operator finalized them all.
func (e *env) deleteWidgets(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, w := range e.widgets {
		if err := e.c.Delete(ctx, w); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	waitForWithin(ctx, t, intervals.GarbageCollecting, "every Widget finalized", func() (bool, string) {
		for _, w := range e.widgets {
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(w), w.DeepCopy()); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("Widget %s/%s still there (%v)", w.GetNamespace(), w.GetName(), err)
			}
		}
		return true, ""
	})
}

// liveCE reads the ClusterExtension (nil when gone).
func (e *env) liveCE(ctx context.Context) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(extensioncleanup.ClusterExtensionGVK)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(e.ce), u); err != nil {
		return nil
	}
	return u
}

// releasedInASettle installs an extension opted in with mode, deletes its ClusterExtension with policy
// and waits for the condition reason of the release, the settle after it lengthened to 20 s so that a
// test acts inside it.
func releasedInASettle(t *testing.T, mode string, policy metav1.DeletionPropagation, reason string) (context.Context, *env) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	e := setup(ctx, t, mode, extensioncleanup.WithGCSettle(fast, 20*time.Second))
	e.deleteCE(ctx, t, policy)
	e.waitCondition(ctx, t, reason)
	return ctx, e
}

func (e *env) depRefs(ctx context.Context, t *testing.T) []metav1.OwnerReference {
	t.Helper()
	dep := &appsv1.Deployment{}
	if err := e.c.Get(ctx, e.depKey, dep); err != nil {
		t.Fatalf("Deployment %s: %v", e.depKey, err)
	}
	return dep.OwnerReferences
}

// waitHolderOnly waits until the operator's Deployment and ServiceAccount carry the holder's reference
// and no ClusterExtension's.
func (e *env) waitHolderOnly(ctx context.Context, t *testing.T) {
	t.Helper()
	waitForWithin(ctx, t, intervals.GarbageCollecting, "the GC to strip the ClusterExtension's reference beside the holder's", func() (bool, string) {
		for _, o := range []client.Object{&appsv1.Deployment{}, &corev1.ServiceAccount{}} {
			if err := e.c.Get(ctx, types.NamespacedName{Namespace: installNS, Name: deployment}, o); err != nil {
				return false, err.Error()
			}
			refs := o.GetOwnerReferences()
			if len(refs) != 1 || refs[0].Name != extensioncleanup.DefaultHolderName {
				return false, fmt.Sprintf("%T %s: ownerReferences %+v", o, o.GetName(), refs)
			}
		}
		return true, ""
	})
}

// heldLeft names the extension's objects of the held kinds (operator-controller's owner labels) that
// still exist and are not being deleted, with their owner references; an orphaned one never goes.
func (e *env) heldLeft(ctx context.Context, t *testing.T) []string {
	t.Helper()
	left := e.leftButCRD(ctx, t)
	if crd := e.crd(ctx, t); crd != nil && crd.DeletionTimestamp == nil {
		left = append(left, fmt.Sprintf("CRD %s (ownerReferences %+v)", crd.Name, crd.OwnerReferences))
	}
	return left
}

// leftButCRD is heldLeft without the CRD (an orphan uninstall keeps it).
func (e *env) leftButCRD(ctx context.Context, t *testing.T) []string {
	t.Helper()
	var left []string
	for _, l := range []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ServiceAccountList{}, &rbacv1.ClusterRoleList{},
		&rbacv1.ClusterRoleBindingList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{}} {
		if err := e.c.List(ctx, l, client.MatchingLabels{"olm.operatorframework.io/owner-kind": "ClusterExtension", "olm.operatorframework.io/owner-name": ceName}); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			o, err := meta.Accessor(item)
			if err != nil {
				t.Fatal(err)
			}
			if o.GetDeletionTimestamp() == nil {
				left = append(left, fmt.Sprintf("%T %s/%s (ownerReferences %+v)", o, o.GetNamespace(), o.GetName(), o.GetOwnerReferences()))
			}
		}
	}
	return left
}

// finalizersOf is u's finalizers ("gone" when u is nil).
func finalizersOf(u *unstructured.Unstructured) any {
	if u == nil {
		return "gone"
	}
	return u.GetFinalizers()
}

// eventReasons are the reasons of the events recorded for the ClusterExtension.
func (e *env) eventReasons(ctx context.Context, t *testing.T) map[string]bool {
	t.Helper()
	l := &corev1.EventList{}
	if err := e.c.List(ctx, l); err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	for _, ev := range l.Items {
		if ev.InvolvedObject.Kind == extensioncleanup.ClusterExtensionGVK.Kind && ev.InvolvedObject.UID == e.ce.GetUID() {
			reasons[ev.Reason] = true
		}
	}
	return reasons
}
