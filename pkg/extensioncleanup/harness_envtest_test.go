package extensioncleanup_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/olmv1fixtures"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

const (
	installNS  = "widget-system"
	installer  = "installer"
	widgetCRD  = "widgets.fixtures.cleanup-e2e.io"
	deployment = "widget-operator"
	ceName     = "widget"
)

// env is widget-operator (v0.1.0 unless setupAt says) installed through OLM v1 on a fresh envtest cluster, reconciled Widgets
// in two namespaces, and the ordered-uninstall controller running in the test process.
type env struct {
	p  *envtest.Provider
	c  client.Client
	m  *olmv1.Managers
	ce *unstructured.Unstructured
	// version is the installed bundle's version (versions).
	version string
	depKey  types.NamespacedName
	widgets []*unstructured.Unstructured
	ctrl    context.CancelFunc
	ctrlErr chan error
	// foreignHold is how long an uninstall waits before removing the foreign finalizers (default 2 s):
	// a correct controller keeps the ClusterExtension until then; the broken-variant test waits longer,
	// so that an early release is seen however slow the machine is.
	foreignHold time.Duration
}

// setup installs the extension with the UninstallAnnotation value mode ("" for none) and starts the
// controller with opts, waiting until the controller has armed an opted-in extension.
func setup(ctx context.Context, t *testing.T, mode string, opts extensioncleanup.Options) *env {
	t.Helper()
	return setupAt(ctx, t, mode, versions[0], opts)
}

// setupAt is setup with widget-operator at version (one of versions).
func setupAt(ctx context.Context, t *testing.T, mode, version string, opts extensioncleanup.Options) *env {
	t.Helper()
	start := time.Now()
	e := &env{depKey: types.NamespacedName{Namespace: installNS, Name: deployment}, version: version}
	env := olmv1fixtures.ForTest(ctx, t, olmv1fixtures.EnvInput{Name: "extensioncleanup", InstallerNamespace: installNS, Installer: installer,
		Push: func(ctx context.Context, reg *olmv1.Registry) (string, error) {
			// Every version the upgrades walk through, then the variant that drops a CRD (harness_upgrade).
			dirs := []string{}
			for _, v := range versions[:len(versions)-1] {
				dirs = append(dirs, bundles.Dir("widget-operator", v))
			}
			dropDir, err := withoutWidgetClasses(t, bundles.Dir("widget-operator", versions[len(versions)-2]), versions[len(versions)-1])
			if err != nil {
				return "", err
			}
			return olmv1.PushPackage(ctx, olmv1.Endpoint{Push: reg.Host, Pull: reg.Host}, "widget", append(dirs, dropDir)...)
		},
		BeforeCatalog: func(ctx context.Context, env *olmv1fixtures.Env) {
			// The holder: the controller's own ClusterRole, as config/operand-cleanup installs it.
			holder := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: extensioncleanup.DefaultHolderName}}
			if err := env.Client.Create(ctx, holder); err != nil {
				t.Fatal(err)
			}
			applyGuards(ctx, t, env.Client)
			e.p, e.c, e.m = env.Provider, env.Client, env.Managers
			e.start(ctx, t, opts)
		}})
	c := env.Client
	e.ce = olmv1.ClusterExtension(ceName, installNS, installer, "widget-operator", version)
	if mode != "" {
		e.ce.SetAnnotations(map[string]string{extensioncleanup.UninstallAnnotation: mode})
	}
	if err := c.Create(ctx, e.ce); err != nil {
		t.Fatal(err)
	}
	if err := olmv1.WaitCondition(ctx, c, intervals.OLMInstall, e.ce, "Installed"); err != nil {
		t.Fatal(err)
	}
	if err := kube.WaitDeploymentAvailable(ctx, c, e.depKey, intervals.Get(intervals.DeploymentAvailable)); err != nil {
		t.Fatalf("the extension's Deployment, run by the local runtime: %v", err)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"w1", "w2"} {
			e.widgets = append(e.widgets, e.createWidget(ctx, t, ns, name))
		}
	}
	if mode != "" {
		e.waitCondition(ctx, t, extensioncleanup.ReasonHolding)
	}
	t.Logf("installed, operator running, Widgets reconciled, %s after the start", time.Since(start).Round(time.Millisecond))
	return e
}

// applyGuards creates the guards as config/operand-cleanup installs them (the very manifests): the
// orphan guard and the unarmed guard.
func applyGuards(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	for _, o := range append(guard(t, extensioncleanup.OrphanGuardName), guard(t, extensioncleanup.UnarmedGuardName)...) {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("the guard's %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// guard is the ValidatingAdmissionPolicy of the name and its binding, from config/operand-cleanup.
func guard(t *testing.T, name string) []*unstructured.Unstructured {
	out, err := operandcleanupconfig.Named(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("config/operand-cleanup has %d objects named %s; want the policy and its binding", len(out), name)
	}
	return out
}

// controller-runtime's own set-up (the manager's client) logs through its global logger, before the
// manager's Logger applies; unset, it prints a stack trace into the test's output.
func init() { ctrllog.SetLogger(logr.Discard()) }

// start runs the controller in its own manager (as Main adds it: AddWhenServed) until stop.
func (e *env) start(ctx context.Context, t *testing.T, opts extensioncleanup.Options) {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	// The controller's log (every owner-reference change) goes to the test's output.
	mgr, err := ctrl.NewManager(e.p.RESTConfig(), ctrl.Options{Scheme: s, Logger: testr.New(t), Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := extensioncleanup.AddWhenServed(mgr, opts, time.Second); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	e.ctrl, e.ctrlErr = cancel, make(chan error, 1)
	go func() { e.ctrlErr <- mgr.Start(cctx) }()
	t.Cleanup(e.stop)
}

// stop stops the controller (a restart is stop, then start).
func (e *env) stop() {
	if e.ctrl == nil {
		return
	}
	e.ctrl()
	<-e.ctrlErr
	e.ctrl = nil
}

func (e *env) createWidget(ctx context.Context, t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	w := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
	w.SetGroupVersionKind(fixturesv1alpha1.GroupVersion.WithKind("Widget"))
	w.SetNamespace(ns)
	w.SetName(name)
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	err := intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		err := widget.Reconciled(ctx, e.c, w)
		return err == nil, fmt.Sprint(err)
	})
	if err != nil {
		t.Fatalf("widget-operator to put its finalizer and record on Widget %s/%s: %v", ns, name, err)
	}
	return w
}

// condition is the controller's condition on the live ClusterExtension (nil when gone or unset).
func (e *env) condition(ctx context.Context) *metav1.Condition {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(extensioncleanup.ClusterExtensionGVK)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(e.ce), live); err != nil {
		return nil
	}
	conds, _ := extensioncleanup.Conditions(live)
	return meta.FindStatusCondition(conds, extensioncleanup.ConditionType)
}

// waitCondition waits until the controller's condition has one of reasons, and returns it.
func (e *env) waitCondition(ctx context.Context, t *testing.T, reasons ...string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	err := intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		c := e.condition(ctx)
		if c == nil {
			return false, "no " + extensioncleanup.ConditionType + " condition"
		}
		got = *c
		return slices.Contains(reasons, c.Reason), fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	})
	if err != nil {
		t.Fatalf("condition %s with reason %v: %v", extensioncleanup.ConditionType, reasons, err)
	}
	return got
}

// deleteCE deletes the ClusterExtension with policy and returns the time.
func (e *env) deleteCE(ctx context.Context, t *testing.T, policy metav1.DeletionPropagation) time.Time {
	t.Helper()
	at := time.Now()
	if err := e.c.Delete(ctx, e.ce, client.PropagationPolicy(policy)); err != nil {
		t.Fatal(err)
	}
	return at
}

// deleteUnarmed deletes the ClusterExtension with policy, opted in but not armed or held for its mode
// (the controller stopped), and returns nil when the unarmed guard refused the delete. The API server
// enforces a policy once its informers have it, so dry-run deletes wait for the first refusal.
func (e *env) deleteUnarmed(ctx context.Context, policy metav1.DeletionPropagation) error {
	var last error
	err := intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		last = e.c.Delete(ctx, e.ce, client.DryRunAll, client.PropagationPolicy(policy))
		return last != nil, "a dry-run delete goes through"
	})
	if err != nil {
		return fmt.Errorf("the unarmed guard never refused a %s delete of opted-in ClusterExtension %s before the controller armed it for its mode: %w", policy, e.ce.GetName(), err)
	}
	err = e.c.Delete(ctx, e.ce, client.PropagationPolicy(policy))
	if !apierrors.IsForbidden(err) || !strings.Contains(fmt.Sprint(err), extensioncleanup.UnarmedGuardName) {
		return fmt.Errorf("a %s delete of opted-in ClusterExtension %s before the controller armed it for its mode: %v; want it refused by %s", policy, e.ce.GetName(), err, extensioncleanup.UnarmedGuardName)
	}
	return nil
}

// waitSettled waits until the ClusterExtension and the operator's Deployment are gone and the local
// runtime stopped the operator, logging every change of state with its time since the deletion.
func (e *env) waitSettled(ctx context.Context, t *testing.T, deleted time.Time) {
	t.Helper()
	last := ""
	err := intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		done, why := e.settled(ctx)
		if why != last {
			t.Logf("+%s %s", time.Since(deleted).Round(time.Millisecond), why)
			last = why
		}
		return done, why
	})
	if err != nil {
		t.Fatalf("the uninstall to settle: %v", err)
	}
}

func (e *env) settled(ctx context.Context) (bool, string) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(extensioncleanup.ClusterExtensionGVK)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(e.ce), live); !apierrors.IsNotFound(err) {
		why := fmt.Sprintf("ClusterExtension still there (finalizers %v, error %v)", live.GetFinalizers(), err)
		if c := e.condition(ctx); c != nil {
			why += "; " + c.Reason + ": " + c.Message
		}
		return false, why
	}
	dep := &appsv1.Deployment{}
	if err := e.c.Get(ctx, e.depKey, dep); !apierrors.IsNotFound(err) {
		return false, fmt.Sprintf("Deployment %s still there (deletionTimestamp %v, error %v)", e.depKey, dep.DeletionTimestamp, err)
	}
	if slices.Contains(e.p.Runtime().Running(), e.depKey) {
		return false, "the local runtime still runs the operator"
	}
	return true, "settled"
}

// crd reads the widgets CRD (nil when gone).
func (e *env) crd(ctx context.Context, t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := e.c.Get(ctx, types.NamespacedName{Name: widgetCRD}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return crd
}

// waitCRDGone waits for the widgets CRD to be gone.
func (e *env) waitCRDGone(ctx context.Context, t *testing.T) {
	t.Helper()
	err := intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := e.c.Get(ctx, types.NamespacedName{Name: widgetCRD}, crd)
		return apierrors.IsNotFound(err), fmt.Sprintf("CRD %s still there (deletionTimestamp %v, ownerReferences %v, error %v)", widgetCRD, crd.DeletionTimestamp, crd.OwnerReferences, err)
	})
	if err != nil {
		t.Errorf("CRD %s to go once its CRs are finalized: %v", widgetCRD, err)
	}
}

// expectAllFinalized asserts every Widget finalized by its operator.
func (e *env) expectAllFinalized(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	verdicts, err := olmv1.Judge(ctx, e.c, e.widgets, widget.Finalized)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verdicts after %s:\n%s", what, olmv1.Report(verdicts))
	for _, v := range verdicts {
		if v.Verdict != olmv1.Finalized {
			t.Errorf("%s: want every Widget %q by its operator; got:\n%s", what, olmv1.Finalized, olmv1.Report(verdicts))
			return
		}
	}
}
