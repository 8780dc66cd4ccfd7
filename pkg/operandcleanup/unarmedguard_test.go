package operandcleanup

import (
	"fmt"
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
	if err := c.Delete(ctx, create("before-the-guard", true)); err != nil {
		t.Fatalf("without the guard, deleting an unarmed opted-in CSV should go through (else this test cannot tell the guard works): %v", err)
	}
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
