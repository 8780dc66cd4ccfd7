package olmv1_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// operatorControllerFinalizers are the finalizers operator-controller v1.2.0 puts on every
// ClusterExtension (internal/operator-controller/controllers/clusterextension_controller.go): its
// image cache and its content manager's watches are removed before the ClusterExtension may go.
var operatorControllerFinalizers = []string{"olm.operatorframework.io/cleanup-unpack-cache", "olm.operatorframework.io/cleanup-contentmanager-cache"}

// TestClusterExtensionDeletedWhileOperatorControllerIsDown deletes the ClusterExtension while
// operator-controller is stopped (a rollout, a crash): its finalizers keep the ClusterExtension
// Terminating, and the garbage collector deletes the dependents of a background deletion only once the
// owner is gone, so nothing is removed: the operator runs, the CRD and every Widget stay untouched.
// Once operator-controller is back it removes its finalizers and the uninstall is the plain one (some
// Widget stuck Terminating, as TestClusterExtensionDeletion). Asserted as measured on v1.2.0.
func TestClusterExtensionDeletedWhileOperatorControllerIsDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	in := install(ctx, t)
	c := in.c
	live := liveExtension(ctx, t, in)
	for _, f := range operatorControllerFinalizers {
		if !slices.Contains(live.GetFinalizers(), f) {
			t.Fatalf("ClusterExtension %s: finalizers %v, want operator-controller's %v (an upstream change: this test's premise is gone)", live.GetName(), live.GetFinalizers(), operatorControllerFinalizers)
		}
	}
	if err := in.m.OperatorController.Stop(10 * time.Second); err != nil {
		t.Logf("operator-controller stopped: %v", err) // its exit status after the signal
	}
	deleted := time.Now()
	if err := c.Delete(ctx, in.ce); err != nil {
		t.Fatal(err)
	}
	// Long enough for the garbage collector to have acted on a deleted owner many times over.
	gomega.NewWithT(t).Consistently(func() string { return removedWhileDown(ctx, c, in) }).WithContext(ctx).
		WithTimeout(3*intervals.Get(intervals.Quiet)).WithPolling(intervals.Poll).
		Should(gomega.BeEmpty(), "with operator-controller down, the deletion of ClusterExtension %s removed something", in.ce.GetName())
	t.Logf("+%s: operator-controller down, ClusterExtension Terminating, nothing removed", time.Since(deleted).Round(time.Millisecond))

	if err := in.m.RestartOperatorController(ctx); err != nil { // its stop finds it stopped: a start
		t.Fatal(err)
	}
	verdicts := judgeSettled(ctx, t, in, deleted)
	expectUninstallNotClean(ctx, t, c, "deleting a ClusterExtension while operator-controller was down, once it is back", verdicts)
}

// removedWhileDown is what the deletion changed that it should not have while operator-controller is
// down ("" when nothing): the ClusterExtension gone or without operator-controller's finalizers, or
// anything installedRemoved reports.
func removedWhileDown(ctx context.Context, c client.Client, in installed) string {
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	if err := c.Get(ctx, client.ObjectKeyFromObject(in.ce), ce); err != nil {
		return fmt.Sprintf("ClusterExtension %s: %v", in.ce.GetName(), err)
	}
	if ce.GetDeletionTimestamp() == nil || !slices.Contains(ce.GetFinalizers(), operatorControllerFinalizers[0]) {
		return fmt.Sprintf("ClusterExtension %s: deletionTimestamp %v, finalizers %v", ce.GetName(), ce.GetDeletionTimestamp(), ce.GetFinalizers())
	}
	return installedRemoved(ctx, c, in)
}

// installedRemoved names the first of the operator's Deployment, the widgets CRD and the Widgets that
// is gone or being deleted ("" when none).
func installedRemoved(ctx context.Context, c client.Client, in installed) string {
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, in.depKey, dep); err != nil || dep.DeletionTimestamp != nil {
		return fmt.Sprintf("Deployment %s: deletionTimestamp %v, error %v", in.depKey, dep.DeletionTimestamp, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, types.NamespacedName{Name: widgetCRD}, crd); err != nil || crd.DeletionTimestamp != nil {
		return fmt.Sprintf("CRD %s: deletionTimestamp %v, error %v", widgetCRD, crd.DeletionTimestamp, err)
	}
	for _, w := range in.widgets {
		live := w.DeepCopy()
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), live); err != nil || live.GetDeletionTimestamp() != nil {
			return fmt.Sprintf("Widget %s/%s: deletionTimestamp %v, error %v", w.GetNamespace(), w.GetName(), live.GetDeletionTimestamp(), err)
		}
	}
	return ""
}

// TestClusterCatalogDeletedRemovesNothing deletes the ClusterCatalog an installed ClusterExtension came
// from: operator-controller cannot resolve any more (Progressing=True Retrying, "no bundles found for
// package"; clusterextension_controller.go returns before applying), Installed stays True, and nothing
// installed is removed: the operator keeps running and finalizing new Widgets. Deleting the
// ClusterExtension afterwards needs no catalog: the plain uninstall, every Widget stuck Terminating.
// Asserted as measured on v1.2.0.
func TestClusterCatalogDeletedRemovesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	in := install(ctx, t)
	c := in.c
	cat := olmv1.ClusterCatalog("fixtures", "")
	if err := c.Delete(ctx, cat); err != nil {
		t.Fatal(err)
	}
	err := intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(cat), cat.DeepCopy())
		return apierrors.IsNotFound(err), fmt.Sprintf("ClusterCatalog %s still there (error %v)", cat.GetName(), err)
	})
	if err != nil {
		t.Fatal(err)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	err = waitConditions(ctx, c, intervals.SpecStep, in.ce, live, func(conds []metav1.Condition) (bool, string) {
		p, i := meta.FindStatusCondition(conds, "Progressing"), meta.FindStatusCondition(conds, "Installed")
		done := p != nil && p.Reason == "Retrying" && strings.Contains(p.Message, `no bundles found for package "widget-operator"`) &&
			i != nil && i.Status == metav1.ConditionTrue
		return done, fmt.Sprintf("conditions %v", conds)
	})
	if err != nil {
		t.Fatalf("ClusterExtension %s, its catalog deleted: want Progressing=True Retrying (no bundles found) and Installed=True: %v", in.ce.GetName(), err)
	}
	conds, _ := olmv1.Conditions(live)
	t.Logf("catalog gone: Progressing %q", meta.FindStatusCondition(conds, "Progressing").Message)
	gomega.NewWithT(t).Consistently(func() string { return installedRemoved(ctx, c, in) }).WithContext(ctx).
		WithTimeout(3*intervals.Get(intervals.Quiet)).WithPolling(intervals.Poll).
		Should(gomega.BeEmpty(), "deleting ClusterCatalog %s removed something ClusterExtension %s installed", cat.GetName(), in.ce.GetName())

	w := in.widgets[0].DeepCopy()
	w.SetName("after-the-catalog")
	w.SetResourceVersion("")
	w.SetUID("")
	w.SetFinalizers(nil)
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	err = intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		err := widget.Reconciled(ctx, c, w)
		return err == nil, fmt.Sprint(err)
	})
	if err != nil {
		t.Fatalf("the operator, its catalog gone, to reconcile a new Widget %s/%s: %v", w.GetNamespace(), w.GetName(), err)
	}
	in.widgets = append(in.widgets, w)

	verdicts := deleteAndJudge(ctx, t, in)
	expectUninstallNotClean(ctx, t, c, "deleting a ClusterExtension whose catalog is gone", verdicts)
}
