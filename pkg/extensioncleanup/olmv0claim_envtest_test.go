package extensioncleanup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// TestAnOLMv0ClaimBlocksTheUninstall: an OLM v0 CSV owning the extension's Widget CRD (a legacy install
// of the same operator, or one not yet gone) blocks a delete-operands uninstall: the Widgets may be that
// operator's, so none is deleted, and the operator is not let go, since the garbage collector would
// then delete the CRD and every Widget with nobody to finalize them. The condition names the CSV; once
// the CSV is gone, the uninstall finalizes every Widget as usual.
func TestAnOLMv0ClaimBlocksTheUninstall(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := setup(ctx, t, extensioncleanup.ModeDeleteOperands, fast)
	expectHeld(ctx, t, e)
	csv := e.legacyCSVClaiming(ctx, t, widgetCRD, "widget-operator.v0.0.1")

	deleted := e.deleteCE(ctx, t, metav1.DeletePropagationBackground)
	cond, err := e.waitBlockedByTheClaim(ctx)
	switch {
	case err != nil:
		t.Fatalf("condition %s naming the CSV: %v", extensioncleanup.ReasonBlocked, err)
	case cond == nil:
		t.Fatal("the ClusterExtension went (or lost its condition) while an OLM v0 CSV claims its CRD")
	case !blockedByTheClaim(cond):
		t.Fatalf("the operator was let go while an OLM v0 CSV claims its CRD (the GC then deletes every Widget): %s: %s", cond.Reason, cond.Message)
	}
	if want := csv.GetNamespace() + "/" + csv.GetName(); !strings.Contains(cond.Message, want) || !strings.Contains(cond.Message, widgetCRD) {
		t.Errorf("condition %s: %q, want it to name CRD %s and CSV %s", cond.Reason, cond.Message, widgetCRD, want)
	}
	// Still blocked several passes later (no event marks "still"): nothing deleted, nothing released.
	time.Sleep(5 * fast.PollInterval)
	if c := e.condition(ctx); c == nil || !blockedByTheClaim(c) {
		t.Errorf("condition while the CSV claims the CRD: %v, want reason %s", c, extensioncleanup.ReasonBlocked)
	}
	if ce := e.liveCE(ctx); ce == nil {
		t.Fatal("the ClusterExtension went while an OLM v0 CSV claims its CRD: the GC takes the CRD and every Widget")
	}
	for _, w := range e.widgets {
		expectUntouched(ctx, t, e, w)
	}
	if crd := e.crd(ctx, t); crd.DeletionTimestamp != nil {
		t.Errorf("CRD %s deleted at %v while an OLM v0 CSV claims it", widgetCRD, crd.DeletionTimestamp)
	}

	if err := e.c.Delete(ctx, csv); err != nil {
		t.Fatal(err)
	}
	e.waitSettled(ctx, t, deleted)
	e.expectAllFinalized(ctx, t, "an ordered uninstall once the OLM v0 CSV claiming its CRD went")
	e.waitCRDGone(ctx, t)
}

// waitBlockedByTheClaim waits until the controller says an OLM v0 claim blocks the uninstall, and
// returns the condition seen last: nil or CleanupCompleted end the wait early (the operator was let go).
func (e *env) waitBlockedByTheClaim(ctx context.Context) (*metav1.Condition, error) {
	var last *metav1.Condition
	err := intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		last = e.condition(ctx)
		if last == nil || last.Reason == extensioncleanup.ReasonCompleted {
			return true, ""
		}
		return blockedByTheClaim(last), last.Reason + ": " + last.Message
	})
	return last, err
}

func blockedByTheClaim(c *metav1.Condition) bool {
	return c.Reason == extensioncleanup.ReasonBlocked && strings.Contains(c.Message, "claimed by an OLM v0 CSV")
}

// legacyCSVClaiming creates OLM v0's CSV CRD (unless there) and a CSV name in the namespace "legacy"
// that owns crd, as an OLM v0 install of the same operator would. No OLM runs: only the claim matters
// to the controller.
func (e *env) legacyCSVClaiming(ctx context.Context, t *testing.T, crd, name string) *unstructured.Unstructured {
	t.Helper()
	all, err := olm.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var csvCRD *apiextensionsv1.CustomResourceDefinition
	for _, c := range all {
		if c.Name == "clusterserviceversions.operators.coreos.com" {
			csvCRD = c
		}
	}
	if csvCRD == nil {
		t.Fatal("operator-framework/api's CRDs hold no clusterserviceversions.operators.coreos.com")
	}
	if err := kube.EnsureCRDs(ctx, e.c, csvCRD); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}}
	if err := e.c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	csv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
		"metadata": map[string]any{"name": name, "namespace": ns.Name},
		"spec": map[string]any{
			"displayName": "widget-operator",
			"install":     map[string]any{"strategy": "deployment", "spec": map[string]any{"deployments": []any{}}},
			"customresourcedefinitions": map[string]any{"owned": []any{
				map[string]any{"name": crd, "kind": "Widget", "version": "v1alpha1"},
			}},
		},
	}}
	if err := e.c.Create(ctx, csv); err != nil {
		t.Fatalf("CSV owning %s: %v", crd, err)
	}
	return csv
}
