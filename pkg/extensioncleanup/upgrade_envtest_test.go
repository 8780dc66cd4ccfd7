package extensioncleanup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/deletions"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// TestUpgradesKeepHoldAndDropACRD walks a delete-operands extension through every upgrade, the last
// one dropping the widgetclasses CRD while a WidgetClass with a foreign finalizer exists, then deletes
// it. What OLM v1 v1.2.0 does with the dropped CRD (docs/olm-v1.md): the preflight
// (crdupgradesafety.runPreflight) looks only at the new release's CRDs, and helm's Client.Update deletes
// what the new release drops (background), the holder's reference notwithstanding; the API server's CRD
// finalizer deletes the CRs, which the still running operator finalizes; the foreign finalizer keeps
// the CRD Terminating. The controller deletes nothing during the upgrades (invariant 2), holds the
// upgraded objects again, and its uninstall waits for the dropped kind's CR without deleting it.
func TestUpgradesKeepHoldAndDropACRD(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := setup(ctx, t, extensioncleanup.ModeDeleteOperands, fast)
	wc := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	wc.SetGroupVersionKind(fixturesv1alpha1.GroupVersion.WithKind("WidgetClass"))
	wc.SetName("c1")
	if err := e.c.Create(ctx, wc); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "WidgetClass c1 reconciled", func() (bool, string) {
		err := widget.Reconciled(ctx, e.c, wc)
		return err == nil, fmt.Sprint(err)
	})
	mustAddFinalizer(ctx, t, e, wc, foreignFinalizer)
	rec, err := deletions.Start(ctx, e.p.RESTConfig(), fixturesv1alpha1.GroupVersion.WithResource("widgets"))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	for to := e.next(); to != ""; to = e.next() {
		start := time.Now()
		e.upgrade(ctx, t, to)
		t.Logf("upgraded to %s in %s", to, time.Since(start).Round(time.Millisecond))
		for _, v := range e.holdViolations(ctx, extensioncleanup.ModeDeleteOperands, "the upgrade to "+to) {
			t.Error(v)
		}
	}
	// The dropped CRD: Terminating (its CR held by the foreign finalizer), the WidgetClass deleted and its
	// record removed by the running operator's finalizer.
	waitFor(ctx, t, "the dropped CRD's WidgetClass finalized by its operator", func() (bool, string) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := e.c.Get(ctx, types.NamespacedName{Name: classCRD}, crd)
		l := live(ctx, t, e, wc)
		fin := widget.Finalized(ctx, e.c, wc)
		why := fmt.Sprintf("CRD %s: deletionTimestamp %v, error %v; WidgetClass c1: %v; its record: %v", classCRD, crd.DeletionTimestamp, err, l != nil && l.GetDeletionTimestamp() != nil, fin)
		return err == nil && crd.DeletionTimestamp != nil && l != nil && l.GetDeletionTimestamp() != nil && fin == nil, why
	})
	barrier := e.createWidget(ctx, t, "team-b", "barrier")
	e.widgets = append(e.widgets, barrier)
	if err := rec.Barrier(ctx, "team-b", barrier.GetName(), 0); err != nil {
		t.Fatal(err)
	}
	for _, d := range rec.Since(0) {
		t.Errorf("Widget %s deleted during the upgrades (finalizers %v): nothing may be deleted while the ClusterExtension is installed", d, d.Finalizers)
	}
	deleted := e.deleteCE(ctx, t, metav1.DeletePropagationBackground)
	// Invariants 2 and 4 on the dropped kind: its CR is waited for, never deleted by the controller, and
	// the condition names it while the foreign finalizer holds it; released, the uninstall completes.
	var conds []string
	waitFor(ctx, t, "the uninstall to wait for the dropped kind's WidgetClass c1, naming it", func() (bool, string) {
		c := e.condition(ctx)
		if c != nil && (len(conds) == 0 || conds[len(conds)-1] != describeCond(c)) {
			conds = append(conds, describeCond(c))
		}
		return c != nil && strings.Contains(c.Message, "WidgetClass.fixtures.cleanup-e2e.io c1") && !e.ceGone(ctx), e.describeCE(ctx)
	})
	t.Logf("the controller's condition while the dropped kind's CR is held:\n  %s", strings.Join(conds, "\n  "))
	if l := live(ctx, t, e, wc); l == nil || l.GetDeletionTimestamp() == nil {
		t.Fatalf("WidgetClass c1: want it still Terminating under the foreign finalizer, got %v", l)
	} else {
		removeFinalizer(ctx, t, e, l, foreignFinalizer)
	}
	waitForWithin(ctx, t, intervals.GarbageCollecting, "the ClusterExtension to go once the dropped kind's CR did", func() (bool, string) {
		return e.ceGone(ctx), e.describeCE(ctx)
	})
	e.waitSettled(ctx, t, deleted)
	e.expectAllFinalized(ctx, t, "the ordered uninstall after the upgrades")
	waitFor(ctx, t, "the dropped CRD to go once its CR did", func() (bool, string) {
		err := e.c.Get(ctx, types.NamespacedName{Name: classCRD}, &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
