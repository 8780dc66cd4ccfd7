package operandcleanup

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/crds"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// TestUnarmedGuard: the policy of config/operand-cleanup refuses to delete a CSV opted in to operand
// cleanup that does not carry Finalizer yet (its operator would go, its operands stay with finalizers
// nobody runs), with a message that says why and the two ways out, and refuses nothing else: an armed
// CSV, one already being deleted, one not opted in, OLM's copy of a global operator's CSV, one OLM
// deletes as replaced (phase Deleting), one opted out. Without the policy the same delete goes through,
// so the test can tell the policy works.
func TestUnarmedGuard(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, c := envtest.ForParallelTest(ctx, t, envtest.WithName("operandcleanup-unarmed"), envtest.WithoutOLM(),
		envtest.WithCRDs(crds.ClusterServiceVersion()))
	const ns, testFinalizer = "default", "example.cleanup-e2e.io/test"
	create := func(name string, enabled bool, mods ...func(*v1alpha1.ClusterServiceVersion)) *v1alpha1.ClusterServiceVersion {
		t.Helper()
		csv := &v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.ClusterServiceVersionSpec{DisplayName: name, Cleanup: v1alpha1.CleanupSpec{Enabled: enabled},
				InstallStrategy: v1alpha1.NamedInstallStrategy{StrategyName: "deployment",
					StrategySpec: v1alpha1.StrategyDetailsDeployment{DeploymentSpecs: []v1alpha1.StrategyDeploymentSpec{}}}}}
		for _, m := range mods {
			m(csv)
		}
		if err := c.Create(ctx, csv); err != nil {
			t.Fatal(err)
		}
		return csv
	}
	setFinalizers := func(csv *v1alpha1.ClusterServiceVersion, fs ...string) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(csv), csv); err != nil {
			t.Fatal(err)
		}
		orig := csv.DeepCopy()
		csv.Finalizers = fs
		if err := c.Patch(ctx, csv, client.MergeFrom(orig)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, create("before-the-guard", true)); err != nil {
		t.Fatalf("without the guard, deleting an unarmed opted-in CSV should go through (else this test cannot tell the guard works): %v", err)
	}
	// Why a foreground deletion is refused even once armed: the GC deletes what the CSV owns, here its
	// operator's Deployment (owned as OLM owns it), while the finalizer still keeps the CSV.
	foreground := client.PropagationPolicy(metav1.DeletePropagationForeground)
	held := create("held", true, func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = []string{Finalizer} })
	operator := newOperatorDeployment(ns)
	f := false // owned as OLM owns its operator's Deployment (ownerutil.AddNonBlockingOwner)
	operator.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.SchemeGroupVersion.String(),
		Kind: v1alpha1.ClusterServiceVersionKind, Name: held.Name, UID: held.UID, Controller: &f, BlockOwnerDeletion: &f}}
	if err := c.Create(ctx, operator); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, held, foreground); err != nil {
		t.Fatalf("without the guard, a foreground delete of an armed CSV should go through: %v", err)
	}
	err := intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(operator), operator)
		return apierrors.IsNotFound(err), fmt.Sprintf("Deployment %s: %v", operator.Name, err)
	})
	if err != nil {
		t.Fatalf("a foreground delete of armed CSV %s: want the GC to delete its operator's Deployment while the finalizer keeps the CSV: %v", held.Name, err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil || !slices.Contains(held.Finalizers, Finalizer) {
		t.Fatalf("CSV %s after its operator's Deployment went: %v, finalizers %v; want it kept by %s", held.Name, err, held.Finalizers, Finalizer)
	}
	setFinalizers(held)
	guard, err := operandcleanupconfig.Named(UnarmedGuardName)
	if err != nil || len(guard) != 2 {
		t.Fatalf("config/operand-cleanup's %s: %d objects, %v; want the policy and its binding", UnarmedGuardName, len(guard), err)
	}
	for _, o := range guard {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	unarmed := create("unarmed", true)
	// The API server applies a new policy once its informers have it: probed with dry-run deletes.
	err = intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		return c.Delete(ctx, unarmed, client.DryRunAll) != nil, "a dry-run delete of the unarmed CSV still goes through"
	})
	if err != nil {
		t.Fatalf("the unarmed guard (%s) never came into force: %v", UnarmedGuardName, err)
	}
	err = c.Delete(ctx, unarmed)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("deleting an unarmed opted-in CSV: %v; want it refused", err)
	}
	for _, want := range []string{"ClusterServiceVersion " + ns + "/unarmed opts in", "spec.cleanup.enabled: true", "no finalizer " + Finalizer,
		"its custom resources stay", "kubectl -n operand-cleanup get deployment", "set spec.cleanup.enabled to false"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	t.Logf("refused as expected: %v", err)
	armedForeground := create("armed-foreground", true, func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = []string{Finalizer} })
	for _, csv := range []*v1alpha1.ClusterServiceVersion{armedForeground, unarmed} {
		err := c.Delete(ctx, csv, foreground)
		if !apierrors.IsForbidden(err) {
			t.Fatalf("a foreground delete of opted-in CSV %s (finalizers %v): %v; want it refused", csv.Name, csv.Finalizers, err)
		}
		if csv != armedForeground {
			continue
		}
		for _, want := range []string{"ClusterServiceVersion " + ns + "/armed-foreground opts in", "foreground deletion",
			"the Deployment of its operator first", "Delete it in the background", "set spec.cleanup.enabled to false"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal %q does not say %q", err, want)
			}
		}
	}
	if err := c.Delete(ctx, armedForeground); err != nil {
		t.Errorf("a background delete of armed CSV %s was refused: %v", armedForeground.Name, err)
	}
	setFinalizers(armedForeground)

	allowed := func(what string, csv *v1alpha1.ClusterServiceVersion) {
		t.Helper()
		if err := c.Delete(ctx, csv); err != nil {
			t.Errorf("deleting %s (CSV %s) was refused: %v", what, csv.Name, err)
		}
	}
	allowed("one not opted in", create("plain", false))
	allowed("OLM's copy of a global operator's CSV", create("copy", true, func(c *v1alpha1.ClusterServiceVersion) {
		c.Labels = map[string]string{"olm.copiedFrom": "operators"}
	}))
	replaced := create("replaced", true)
	now := metav1.Now()
	replaced.SetPhase(v1alpha1.CSVPhaseDeleting, v1alpha1.CSVReasonReplaced, "being replaced", &now)
	if err := c.Status().Update(ctx, replaced); err != nil {
		t.Fatal(err)
	}
	allowed("one OLM deletes as replaced", replaced)
	armed := create("armed", true, func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = []string{Finalizer, testFinalizer} })
	allowed("an armed one", armed)
	// Finished by the controller (its finalizer gone) while another finalizer keeps it: a second delete.
	setFinalizers(armed, testFinalizer)
	allowed("one already being deleted", armed)
	setFinalizers(armed)
	// The opt-out is the way out the refusal names.
	if err := c.Patch(ctx, unarmed, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"cleanup":{"enabled":false}}}`))); err != nil {
		t.Fatal(err)
	}
	allowed("one opted out", unarmed)

	// A namespace deleted with an unarmed opted-in CSV in it waits, its condition naming the refusal, until
	// the CSV is armed or opted out (here: opted out).
	doomed := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
	if err := c.Create(ctx, doomed); err != nil {
		t.Fatal(err)
	}
	inDoomed := create("in-doomed", true, func(c *v1alpha1.ClusterServiceVersion) { c.Namespace = doomed.Name })
	if err := c.Delete(ctx, doomed); err != nil {
		t.Fatal(err)
	}
	err = intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(doomed), doomed); err != nil {
			return false, err.Error()
		}
		for _, cond := range doomed.Status.Conditions {
			if cond.Type == corev1.NamespaceDeletionContentFailure && strings.Contains(cond.Message, UnarmedGuardName) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("namespace conditions %v", doomed.Status.Conditions)
	})
	if err != nil {
		t.Fatalf("namespace %s deleted with an unarmed opted-in CSV in it: want it waiting with a condition naming the guard: %v", doomed.Name, err)
	}
	if err := c.Patch(ctx, inDoomed, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"cleanup":{"enabled":false}}}`))); err != nil {
		t.Fatal(err)
	}
	err = intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(doomed), doomed)
		return apierrors.IsNotFound(err), fmt.Sprint("namespace still there: ", err)
	})
	if err != nil {
		t.Fatalf("namespace %s after the CSV in it opted out: %v", doomed.Name, err)
	}
}
