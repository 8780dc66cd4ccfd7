package olmv1_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"

	"github.com/cleanup-e2e/cleanup-e2e/fixtures/olmv1fixtures"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

const (
	installNS  = "widget-system"
	installer  = "installer"
	widgetCRD  = "widgets.fixtures.cleanup-e2e.io"
	deployment = "widget-operator" // the CSV's deployment name
)

// TestClusterExtensionDeletion installs widget-operator v0.1.0 through a ClusterCatalog and a
// ClusterExtension, lets it reconcile Widgets in two namespaces, deletes the ClusterExtension (what
// upstream documents as uninstalling) and gives each Widget its verdict.
//
// It asserts OLM v1 v1.2.0's behaviour as measured, not what an operator team wants: the garbage
// collector removes the operator's Deployment, ServiceAccount and RBAC at the same time as the CRDs,
// so the CRD's cleanup deletes Widgets whose operator is gone: they stay Terminating (every one, as
// measured; the order is a race), and so does the CRD (docs/olm-v1.md). A change upstream (an ordered uninstall, a helm uninstall, CRs
// deleted first) fails it with each Widget's verdict.
func TestClusterExtensionDeletion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	in := install(ctx, t)
	p, c := in.p, in.c
	verdicts := deleteAndJudge(ctx, t, in)

	// As measured on v1.2.0 (docs/olm-v1.md): every Widget stuck Terminating. Which goes first, the
	// operator's permissions or the CRD cleanup's deletes, is a race upstream, so a Widget the operator
	// finalized in time is possible: what must hold is that the uninstall is not clean — some Widget is
	// stuck, none is left undeleted — as long as upstream deletes the CRD with the operator.
	expectUninstallNotClean(ctx, t, c, "deleting a ClusterExtension", verdicts)
	for _, v := range verdicts {
		if v.Verdict == olmv1.StuckTerminating && !strings.Contains(v.Detail, "its CRD "+widgetCRD+" Terminating since") {
			t.Errorf("%s: want the verdict to name the CRD deletion that deleted it", v)
		}
	}
	if t.Failed() {
		t.Logf("widget-operator's log is under %s", p.Runtime().LogDir())
	}
}

// TestCRsDeletedBeforeTheClusterExtension is the order an operator team can use today: delete the
// CRs and wait for them to go while the operator runs, then delete the ClusterExtension. Every Widget
// is finalized by its operator and the CRD goes with the extension.
func TestCRsDeletedBeforeTheClusterExtension(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	in := install(ctx, t)
	c := in.c
	for _, w := range in.widgets {
		if err := c.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range in.widgets {
		err := intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
			err := c.Get(ctx, client.ObjectKeyFromObject(w), w.DeepCopy())
			return apierrors.IsNotFound(err), fmt.Sprintf("Widget %s/%s still there (error %v)", w.GetNamespace(), w.GetName(), err)
		})
		if err != nil {
			t.Fatalf("Widget %s/%s to be gone while its operator runs: %v", w.GetNamespace(), w.GetName(), err)
		}
	}
	verdicts := deleteAndJudge(ctx, t, in)
	for _, v := range verdicts {
		if v.Verdict != olmv1.Finalized {
			t.Errorf("want every Widget %q when the CRs go before the ClusterExtension; got:\n%s", olmv1.Finalized, olmv1.Report(verdicts))
			break
		}
	}
	err := intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		err := c.Get(ctx, types.NamespacedName{Name: widgetCRD}, &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), fmt.Sprintf("CRD %s still there (error %v)", widgetCRD, err)
	})
	if err != nil {
		t.Errorf("CRD %s to go with ClusterExtension %s once no Widget is left: %v", widgetCRD, in.ce.GetName(), err)
	}
}

// installed is widget-operator installed through OLM v1 on a fresh envtest cluster, with reconciled
// Widgets in two namespaces.
type installed struct {
	p       *envtest.Provider
	m       *olmv1.Managers
	c       client.Client
	ce      *unstructured.Unstructured
	depKey  types.NamespacedName
	widgets []*unstructured.Unstructured
}

// install starts a control plane, the registry and OLM v1, installs widget-operator v0.1.0 through a
// ClusterCatalog and a ClusterExtension, and creates two Widgets in each of two namespaces, returning
// once the operator has put its finalizer and record on each.
func install(ctx context.Context, t *testing.T) installed {
	t.Helper()
	return installWith(ctx, t, nil)
}

// installWith is install with afterPush, if not nil, run once the fixtures are pushed and before the
// catalog is created: a test replaces a bundle image there (e.g. a CRD marked helm.sh/resource-policy: keep).
func installWith(ctx context.Context, t *testing.T, afterPush func(context.Context, *olmv1.Registry) error) installed {
	t.Helper()
	start := time.Now()
	env := olmv1fixtures.ForTest(ctx, t, olmv1fixtures.EnvInput{Name: "olmv1", InstallerNamespace: installNS, Installer: installer,
		Push: func(ctx context.Context, reg *olmv1.Registry) (string, error) {
			if err := olmv1fixtures.Push(ctx, reg); err != nil {
				return "", err
			}
			if afterPush != nil {
				if err := afterPush(ctx, reg); err != nil {
					return "", err
				}
			}
			return olmv1fixtures.CatalogRef(reg), nil
		}})
	p, c := env.Provider, env.Client
	ce := olmv1.ClusterExtension("widget", installNS, installer, "widget-operator", "0.1.0")
	if err := c.Create(ctx, ce); err != nil {
		t.Fatal(err)
	}
	if err := olmv1.WaitCondition(ctx, c, intervals.OLMInstall, ce, "Installed"); err != nil {
		t.Fatal(err)
	}
	depKey := types.NamespacedName{Namespace: installNS, Name: deployment}
	if err := kube.WaitDeploymentAvailable(ctx, c, depKey, intervals.Get(intervals.DeploymentAvailable)); err != nil {
		t.Fatalf("the extension's Deployment, run by the local runtime: %v", err)
	}
	t.Logf("ClusterExtension Installed, operator running, %s after the start", time.Since(start).Round(time.Millisecond))

	var widgets []*unstructured.Unstructured
	for _, ns := range []string{"team-a", "team-b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"w1", "w2"} {
			w := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
			w.SetGroupVersionKind(fixturesv1alpha1.GroupVersion.WithKind("Widget"))
			w.SetNamespace(ns)
			w.SetName(name)
			if err := c.Create(ctx, w); err != nil {
				t.Fatal(err)
			}
			widgets = append(widgets, w)
		}
	}
	for _, w := range widgets {
		err := intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
			err := widget.Reconciled(ctx, c, w)
			return err == nil, fmt.Sprint(err)
		})
		if err != nil {
			t.Fatalf("widget-operator to put its finalizer and record on Widget %s/%s: %v", w.GetNamespace(), w.GetName(), err)
		}
	}

	return installed{p: p, m: env.Managers, c: c, ce: ce, depKey: depKey, widgets: widgets}
}

// liveExtension reads the ClusterExtension of in from the API server.
func liveExtension(ctx context.Context, t *testing.T, in installed) *unstructured.Unstructured {
	t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	if err := in.c.Get(ctx, client.ObjectKeyFromObject(in.ce), live); err != nil {
		t.Fatalf("ClusterExtension %s: %v", in.ce.GetName(), err)
	}
	return live
}

// deleteAndJudge deletes the ClusterExtension (background) and returns each Widget's verdict once the
// uninstall settled.
func deleteAndJudge(ctx context.Context, t *testing.T, in installed) []olmv1.CRVerdict {
	t.Helper()
	deleted := time.Now()
	if err := in.c.Delete(ctx, in.ce); err != nil {
		t.Fatal(err)
	}
	return judgeSettled(ctx, t, in, deleted)
}

// judgeSettled waits until the uninstall that began at deleted settled, then gives each Widget its
// verdict, logged with the time since the deletion.
func judgeSettled(ctx context.Context, t *testing.T, in installed, deleted time.Time) []olmv1.CRVerdict {
	t.Helper()
	waitSettled(ctx, t, in, deleted)
	verdicts, err := olmv1.Judge(ctx, in.c, in.widgets, widget.Finalized, olmv1.OperatorLog(func() (string, error) {
		return in.p.WorkloadLog(in.depKey.Namespace, in.depKey.Name)
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range verdicts {
		if strings.Contains(v.Detail, olmv1.OperatorLogUnread) {
			t.Errorf("%s: the local runtime's log of %s must outlive the uninstall", v, in.depKey)
		}
	}
	t.Logf("%s after deleting ClusterExtension %s:\n%s", time.Since(deleted).Round(time.Millisecond), in.ce.GetName(), olmv1.Report(verdicts))
	return verdicts
}

// waitSettled waits until the ClusterExtension and the operator's Deployment are gone, the local
// runtime no longer runs the operator (nothing can finalize a Widget after that) and every Widget is
// gone or pending deletion, logging each change with its time since deleted: the timeline.
func waitSettled(ctx context.Context, t *testing.T, in installed, deleted time.Time) {
	t.Helper()
	u := olmv1.Uninstall{ClusterExtension: in.ce, Deployment: in.depKey, CRs: in.widgets,
		OperatorRunning: func(context.Context) (bool, string) {
			return slices.Contains(in.p.Runtime().Running(), in.depKey), fmt.Sprintf("the local runtime still runs %s", in.depKey)
		}}
	if err := u.WaitSettled(ctx, in.c, deleted, t.Logf); err != nil {
		t.Fatal(err)
	}
}

// expectUninstallNotClean asserts olmv1.UninstallNotClean for the widgets CRD: each Widget stuck
// Terminating or finalized, at least one stuck, the CRD Terminating. what names the deletion.
func expectUninstallNotClean(ctx context.Context, t *testing.T, c client.Client, what string, verdicts []olmv1.CRVerdict) {
	t.Helper()
	for _, msg := range olmv1.UninstallNotClean(ctx, c, what, widgetCRD, verdicts) {
		t.Error(msg)
	}
}
