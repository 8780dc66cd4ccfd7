package extensioncleanup_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// TestUnarmedGuard: the policy of config/operand-cleanup refuses to delete an opted-in ClusterExtension
// that does not carry the controller's Finalizer yet (a deletion then would be OLM v1's own uninstall, the
// CRDs and every CR taken at once), with a message that says why and the two ways out, and refuses
// nothing else: an armed one, one already being deleted, one not opted in (no annotation, or a value the
// controller ignores), one opted out; and a foreground delete of an armed one until the controller
// holds its objects for its mode (condition Holding). Without the policy the same delete goes through (so the test can
// tell the policy works), and a deletecollection is refused item by item as a delete is.
func TestUnarmedGuard(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	paths, err := olmv1.CRDPaths()
	if err != nil {
		t.Fatal(err)
	}
	_, c := envtest.ForParallelTest(ctx, t, envtest.WithName("extensioncleanup-unarmed"), envtest.WithoutOLM(), envtest.WithCRDPaths(paths...))
	const testFinalizer = "example.cleanup-e2e.io/test"
	create := func(name, mode string, finalizers ...string) *unstructured.Unstructured {
		t.Helper()
		ce := olmv1.ClusterExtension(name, "widget-system", "installer", "widget-operator", "0.1.0")
		if mode != "" {
			ce.SetAnnotations(map[string]string{extensioncleanup.UninstallAnnotation: mode})
		}
		ce.SetFinalizers(finalizers)
		if err := c.Create(ctx, ce); err != nil {
			t.Fatal(err)
		}
		return ce
	}
	refused := func(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) }

	if err := c.Delete(ctx, create("before-the-guard", extensioncleanup.ModeDeleteOperands)); err != nil {
		t.Fatalf("without the guard, deleting an unarmed opted-in ClusterExtension should go through (else this test cannot tell the guard works): %v", err)
	}
	applyGuards(ctx, t, c)
	unarmed := create("unarmed", extensioncleanup.ModeDeleteOperands)
	// The API server applies a new policy once its informers have it: probed with dry-run deletes.
	var refusal error
	err = intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		refusal = c.Delete(ctx, unarmed, client.DryRunAll)
		return refusal != nil, "a dry-run delete of the unarmed ClusterExtension still goes through"
	})
	if err != nil {
		t.Fatalf("the unarmed guard never came into force: %v", err)
	}
	if !refused(refusal) {
		t.Fatalf("dry-run delete of an unarmed opted-in ClusterExtension: %v; want a refusal by the policy", refusal)
	}

	for _, mode := range []string{extensioncleanup.ModeDeleteOperands, extensioncleanup.ModeOrphan} {
		ce := create("unarmed-"+mode, mode)
		err := c.Delete(ctx, ce)
		if !refused(err) {
			t.Fatalf("deleting unarmed ClusterExtension %s (%s): %v; want it refused", ce.GetName(), mode, err)
		}
		for _, want := range []string{"ClusterExtension " + ce.GetName() + " opts in", extensioncleanup.UninstallAnnotation + "=" + mode,
			"no finalizer " + extensioncleanup.Finalizer, "the garbage collector would take its CRDs", "reason Holding", "kubectl -n operand-cleanup get deployment", "remove the annotation"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal %q does not say %q", err, want)
			}
		}
	}
	t.Logf("refused as expected: %v", c.Delete(ctx, unarmed))

	allowed := func(what string, ce *unstructured.Unstructured) {
		t.Helper()
		if err := c.Delete(ctx, ce); err != nil {
			t.Errorf("deleting %s (ClusterExtension %s) was refused: %v", what, ce.GetName(), err)
		}
	}
	allowed("one not opted in", create("plain", ""))
	allowed("one with an annotation value the controller ignores", create("unknown-mode", "delete-everything"))
	armed := create("armed", extensioncleanup.ModeDeleteOperands, extensioncleanup.Finalizer, testFinalizer)
	allowed("an armed one", armed)
	// Released by the controller (its finalizer gone) while another finalizer keeps it: a second delete.
	patchFinalizers(ctx, t, c, armed, testFinalizer)
	allowed("one already being deleted", armed)
	patchFinalizers(ctx, t, c, armed)

	// A foreground deletion has the GC delete the dependents first: refused until the controller says it
	// holds them for the annotation's mode, whatever it said for another mode (a switch not acted on yet).
	held := create("held", extensioncleanup.ModeDeleteOperands, extensioncleanup.Finalizer, testFinalizer)
	foreground := client.PropagationPolicy(metav1.DeletePropagationForeground)
	for _, said := range []string{"", extensioncleanup.ModeOrphan + ": on deletion the CRDs stay; holding 2 objects"} {
		if said != "" {
			setHolding(ctx, t, c, held, said)
		}
		err := c.Delete(ctx, held, foreground)
		if !refused(err) {
			t.Fatalf("a foreground delete of ClusterExtension %s, armed, its condition saying %q: %v; want it refused", held.GetName(), said, err)
		}
		for _, want := range []string{"ClusterExtension held opts in", "does not hold its objects for that mode yet",
			"starting " + extensioncleanup.ModeDeleteOperands + ":", "foreground deletion", "delete it in the background", "remove the annotation"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal %q does not say %q", err, want)
			}
		}
	}
	setHolding(ctx, t, c, held, extensioncleanup.ModeDeleteOperands+": on deletion the operands go first; holding 5 objects")
	if err := c.Delete(ctx, held, foreground); err != nil {
		t.Errorf("a foreground delete of ClusterExtension %s, held for its mode: %v; want it to go through", held.GetName(), err)
	}
	patchFinalizers(ctx, t, c, held)
	// The opt-out is the way out the refusal names.
	if err := c.Patch(ctx, unarmed, client.RawPatch("application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+extensioncleanup.UninstallAnnotation+`":null}}}`))); err != nil {
		t.Fatal(err)
	}
	allowed("one opted out", unarmed)

	// deletecollection: the API server admits each item as a delete, so the opted-in unarmed ones stay.
	create("collected-plain", "")
	left := create("collected-unarmed", extensioncleanup.ModeOrphan)
	all := &unstructured.Unstructured{}
	all.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	if err := c.DeleteAllOf(ctx, all); !refused(err) {
		t.Errorf("deletecollection with an unarmed opted-in ClusterExtension: %v; want a refusal", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(left), left); err != nil {
		t.Errorf("an unarmed opted-in ClusterExtension after a deletecollection: %v; want it kept", err)
	}
}

// setHolding gives the ClusterExtension the controller's Holding condition with message msg.
func setHolding(ctx context.Context, t *testing.T, c client.Client, ce *unstructured.Unstructured, msg string) {
	t.Helper()
	if err := c.Get(ctx, client.ObjectKeyFromObject(ce), ce); err != nil {
		t.Fatal(err)
	}
	cond, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&metav1.Condition{Type: extensioncleanup.ConditionType,
		Status: metav1.ConditionTrue, Reason: extensioncleanup.ReasonHolding, Message: msg, LastTransitionTime: metav1.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(ce.Object, []any{cond}, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Update(ctx, ce); err != nil {
		t.Fatal(err)
	}
}

// patchFinalizers sets the ClusterExtension's finalizers to fs, as the controller's release does.
func patchFinalizers(ctx context.Context, t *testing.T, c client.Client, ce *unstructured.Unstructured, fs ...string) {
	t.Helper()
	if err := c.Get(ctx, client.ObjectKeyFromObject(ce), ce); err != nil {
		t.Fatal(err)
	}
	orig := ce.DeepCopy()
	ce.SetFinalizers(fs)
	if err := c.Patch(ctx, ce, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
}
