package extensioncleanup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// fast makes a test's waits short: a pass every 300 ms, a stall reported after 2 s.
var fast = extensioncleanup.Options{PollInterval: 300 * time.Millisecond, StallTimeout: 2 * time.Second, HoldResync: 2 * time.Second}

// TestOrderedUninstallBackground: opted in with delete-operands, the ClusterExtension deleted the
// default way (background): every Widget is finalized by its running operator, then the CRD, the
// operator and its RBAC go; a CRD the extension does not own, labelled as if it did, keeps its CR.
func TestOrderedUninstallBackground(t *testing.T) {
	t.Parallel()
	orderedUninstall(t, metav1.DeletePropagationBackground)
}

// TestOrderedUninstallForeground: the same with kubectl delete --cascade=foreground, where the garbage
// collector deletes the blocking dependents at once: the holder's owner reference keeps them, and the
// controller ends the GC's wait, which a dependent of the test's keeps on until then.
func TestOrderedUninstallForeground(t *testing.T) {
	t.Parallel()
	orderedUninstall(t, metav1.DeletePropagationForeground)
}

func orderedUninstall(t *testing.T, policy metav1.DeletionPropagation) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := setup(ctx, t, extensioncleanup.ModeDeleteOperands, fast)
	expectHeld(ctx, t, e)
	thing := notOwnedKind(ctx, t, e)

	foreground := policy == metav1.DeletePropagationForeground
	var unblock func()
	if foreground {
		unblock = e.blockForegroundWait(ctx, t)
	}
	deleted := e.deleteCE(ctx, t, policy)
	if foreground {
		// A foreground deletion is carried out as a held background one (doc.go, invariant 6): the
		// blocker keeps the GC from ending its wait, so only the controller can.
		waitForWithin(ctx, t, intervals.GarbageCollecting, "the controller to end the foreground wait (event "+extensioncleanup.ReasonForegroundEnded+")", func() (bool, string) {
			return e.eventReasons(ctx, t)[extensioncleanup.ReasonForegroundEnded], fmt.Sprintf("ClusterExtension finalizers %v", finalizersOf(e.liveCE(ctx)))
		})
		unblock()
	}
	e.waitSettled(ctx, t, deleted)
	e.expectAllFinalized(ctx, t, fmt.Sprintf("an ordered uninstall (%s)", policy))
	e.waitCRDGone(ctx, t)
	// The GC deletes them once the ClusterExtension is gone: none may be left without an owner.
	waitForWithin(ctx, t, intervals.GarbageCollecting, fmt.Sprintf("the extension's objects to go after an ordered uninstall (%s)", policy), func() (bool, string) {
		left := e.heldLeft(ctx, t)
		return len(left) == 0, fmt.Sprint(left)
	})
	if !foreground && e.eventReasons(ctx, t)[extensioncleanup.ReasonForegroundEnded] {
		t.Errorf("a %s deletion: event %s recorded, want none", policy, extensioncleanup.ReasonForegroundEnded)
	}
	t.Logf("CRD %s gone %s after the deletion", widgetCRD, time.Since(deleted).Round(time.Millisecond))
	expectUntouched(ctx, t, e, thing)
}

// blockForegroundWait gives the ClusterExtension a dependent the garbage collector cannot delete until
// unblock: a ConfigMap it owns with blockOwnerDeletion, kept by a finalizer of the test's. Without it
// the GC ends a foreground wait by itself once it has stripped the ClusterExtension's reference from
// every held object (processDeletingDependentsItem: no blocking dependent left), which under load
// can come before the controller's first reconcile of the deletion; with it, only the controller can.
func (e *env) blockForegroundWait(ctx context.Context, t *testing.T) (unblock func()) {
	t.Helper()
	const finalizer = "cleanup-e2e.io/test-blocker"
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace("default")
	cm.SetName("foreground-blocker")
	cm.SetFinalizers([]string{finalizer})
	block := true
	cm.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: e.ce.GetAPIVersion(), Kind: e.ce.GetKind(),
		Name: e.ce.GetName(), UID: e.ce.GetUID(), BlockOwnerDeletion: &block}})
	if err := e.c.Create(ctx, cm); err != nil {
		t.Fatalf("ConfigMap %s/%s to block the foreground wait: %v", cm.GetNamespace(), cm.GetName(), err)
	}
	return func() { removeFinalizer(ctx, t, e, cm, finalizer) }
}

// expectHeld: the operator's Deployment and the widgets CRD carry the holder's owner reference, after
// the ClusterExtension's controller reference.
func expectHeld(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	dep := &appsv1.Deployment{}
	if err := e.c.Get(ctx, e.depKey, dep); err != nil {
		t.Fatal(err)
	}
	crd := e.crd(ctx, t)
	for _, o := range []metav1.Object{dep, crd} {
		refs := o.GetOwnerReferences()
		if len(refs) != 2 || refs[0].Kind != "ClusterExtension" || refs[1].Kind != "ClusterRole" || refs[1].Name != extensioncleanup.DefaultHolderName {
			t.Errorf("%s: want the ClusterExtension's reference then the holder's, got %+v", o.GetName(), refs)
		}
	}
}

// notOwnedKind creates a CRD carrying operator-controller's owner labels for the extension, but no owner
// reference (a kind the extension does not own), and one CR of it.
func notOwnedKind(ctx context.Context, t *testing.T, e *env) *unstructured.Unstructured {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.example.cleanup-e2e.io", Labels: map[string]string{
			"olm.operatorframework.io/owner-kind": "ClusterExtension", "olm.operatorframework.io/owner-name": ceName}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.cleanup-e2e.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					XPreserveUnknownFields: ptrTrue()}}}}},
	}
	if err := e.c.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	thing := &unstructured.Unstructured{}
	thing.SetAPIVersion("example.cleanup-e2e.io/v1")
	thing.SetKind("Thing")
	thing.SetNamespace("team-a")
	thing.SetName("t1")
	err := intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		err := e.c.Create(ctx, thing)
		return err == nil, fmt.Sprint(err)
	})
	if err != nil {
		t.Fatalf("a Thing (CRD established): %v", err)
	}
	return thing
}

func ptrTrue() *bool { b := true; return &b }

func expectUntouched(ctx context.Context, t *testing.T, e *env, obj *unstructured.Unstructured) {
	t.Helper()
	live := obj.DeepCopy()
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil || live.GetDeletionTimestamp() != nil {
		t.Errorf("%s %s/%s, which this uninstall may not delete: want it untouched, got deletionTimestamp %v, error %v",
			obj.GetKind(), obj.GetNamespace(), obj.GetName(), live.GetDeletionTimestamp(), err)
	}
}

// TestStallExplainedAndRestart: a Widget with a foreign finalizer keeps the ordered uninstall
// pending: the condition names it and its finalizer (CleanupStalled), the operator keeps running, a
// restart of the controller changes nothing; once the foreign finalizer goes, the uninstall completes.
func TestStallExplainedAndRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := setup(ctx, t, extensioncleanup.ModeDeleteOperands, fast)
	const foreign = "example.cleanup-e2e.io/foreign"
	blocked := e.widgets[0]
	mustAddFinalizer(ctx, t, e, blocked, foreign)

	deleted := e.deleteCE(ctx, t, metav1.DeletePropagationBackground)
	c := e.waitCondition(ctx, t, extensioncleanup.ReasonStalled)
	if !strings.Contains(c.Message, "team-a/w1") || !strings.Contains(c.Message, foreign) {
		t.Errorf("the stall must name the Widget and its foreign finalizer; got %q", c.Message)
	}
	t.Logf("+%s %s: %s", time.Since(deleted).Round(time.Millisecond), c.Reason, c.Message)

	e.stop()
	e.start(ctx, t, fast)
	time.Sleep(3 * time.Second) // a restarted controller's first passes
	if _, why := e.settled(ctx); why == "settled" {
		t.Fatal("a restarted controller released a ClusterExtension whose CR is still pending")
	}
	if err := e.c.Get(ctx, e.depKey, &appsv1.Deployment{}); err != nil {
		t.Fatalf("the operator's Deployment while a CR is pending: %v", err)
	}
	c = e.waitCondition(ctx, t, extensioncleanup.ReasonStalled, extensioncleanup.ReasonWaitingOnCleanup)
	t.Logf("after the restart: %s: %s", c.Reason, c.Message)

	removeFinalizer(ctx, t, e, blocked, foreign)
	e.waitSettled(ctx, t, deleted)
	e.expectAllFinalized(ctx, t, "an ordered uninstall held up by a foreign finalizer")
	e.waitCRDGone(ctx, t)
}

// TestOptOut: removing the annotation from an installed ClusterExtension releases everything (no
// finalizer, no holder reference); opted in again while the controller is down, it cannot be deleted
// until the controller is back and has armed it (the unarmed guard); removing the annotation in the
// middle of an ordered uninstall stops it: the ClusterExtension and what it owns go as OLM v1 removes
// them, the pending Widget stays.
func TestOptOut(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := setup(ctx, t, extensioncleanup.ModeDeleteOperands, fast)
	setAnnotation(ctx, t, e, "")
	e.waitCondition(ctx, t, extensioncleanup.ReasonAborted)
	waitFor(ctx, t, "the finalizer and every holder reference gone after the opt-out", func() (bool, string) {
		return noHold(ctx, e)
	})

	// Opted in again while the controller is down: not armed, so a deletion now would be OLM v1's own
	// uninstall. The unarmed guard refuses it until the restarted controller has armed it.
	e.stop()
	setAnnotation(ctx, t, e, extensioncleanup.ModeDeleteOperands)
	if err := e.deleteUnarmed(ctx, metav1.DeletePropagationBackground); err != nil {
		t.Fatal(err)
	}
	e.start(ctx, t, fast)
	e.waitCondition(ctx, t, extensioncleanup.ReasonHolding)
	const foreign = "example.cleanup-e2e.io/foreign"
	blocked := e.widgets[0]
	mustAddFinalizer(ctx, t, e, blocked, foreign)
	deleted := e.deleteCE(ctx, t, metav1.DeletePropagationBackground)
	e.waitCondition(ctx, t, extensioncleanup.ReasonStalled, extensioncleanup.ReasonWaitingOnCleanup)
	setAnnotation(ctx, t, e, "")
	e.waitSettled(ctx, t, deleted)
	live := blocked.DeepCopy()
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(blocked), live); err != nil || live.GetDeletionTimestamp() == nil {
		t.Errorf("the Widget with the foreign finalizer: want it still Terminating after the opt-out, got %v (error %v)", live.GetDeletionTimestamp(), err)
	}
	removeFinalizer(ctx, t, e, live, foreign) // let the cluster go
}

func without(fs []string, f string) []string {
	var out []string
	for _, x := range fs {
		if x != f {
			out = append(out, x)
		}
	}
	return out
}

func setAnnotation(ctx context.Context, t *testing.T, e *env, mode string) {
	t.Helper()
	e.patchCE(ctx, t, func(ce *unstructured.Unstructured) {
		a := ce.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		if mode == "" {
			delete(a, extensioncleanup.UninstallAnnotation)
		} else {
			a[extensioncleanup.UninstallAnnotation] = mode
		}
		ce.SetAnnotations(a)
	})
}

// patchCE applies mutate to the live ClusterExtension with a merge patch and returns it as patched.
func (e *env) patchCE(ctx context.Context, t *testing.T, mutate func(*unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(extensioncleanup.ClusterExtensionGVK)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(e.ce), live); err != nil {
		t.Fatal(err)
	}
	orig := live.DeepCopy()
	mutate(live)
	if err := e.c.Patch(ctx, live, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	return live
}

// noHold: no finalizer of this controller on the ClusterExtension, no holder reference on the
// Deployment or the CRD.
func noHold(ctx context.Context, e *env) (bool, string) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(extensioncleanup.ClusterExtensionGVK)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(e.ce), live); err != nil {
		return false, err.Error()
	}
	for _, f := range live.GetFinalizers() {
		if f == extensioncleanup.Finalizer {
			return false, "finalizer still there"
		}
	}
	dep := &appsv1.Deployment{}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.c.Get(ctx, e.depKey, dep); err != nil {
		return false, err.Error()
	}
	if err := e.c.Get(ctx, types.NamespacedName{Name: widgetCRD}, crd); err != nil {
		return false, err.Error()
	}
	for _, o := range []metav1.Object{dep, crd} {
		for _, r := range o.GetOwnerReferences() {
			if r.Kind == "ClusterRole" {
				return false, o.GetName() + " still held"
			}
		}
	}
	return true, "released"
}

func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	if err := intervals.Wait(ctx, intervals.SpecStep, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
