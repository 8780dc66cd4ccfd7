package specs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/onsi/gomega"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/budget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/bundle"
	"github.com/cleanup-e2e/cleanup-e2e/framework/hold"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/leftovers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// Installation is one spec's install of an operator: its namespaces, CSV and operands. Specs of the
// library use it, and so can an operator repo's own specs for cases the library does not cover.
type Installation struct {
	t   T
	g   gomega.Gomega
	in  OperandCleanupSpecInput
	c   client.Client
	l   layout
	all []string
	csv *operatorsv1alpha1.ClusterServiceVersion
	ops *operands
	// logs reads the operator's pod logs on a cluster with nodes, for the last error a crash-looping
	// operator logged (nil without a provider's REST config).
	logs olm.PodLogs
	// operatorLog is everything the operator wrote since its install (keepOperatorLog).
	operatorLog func() (string, error)
	// webhooksServing: the CSV's webhooks were found callable once (WaitWebhooksServing).
	webhooksServing bool
	// leftovers check state (leftovers.go)
	snapper *leftovers.Snapshotter
	before  *leftovers.Snapshot
	csvUIDs []types.UID
}

// NewInstallation starts an installation in the running Ginkgo spec: it makes the namespaces of mode's
// layout (deleted when the spec ends). Install, CreateOperands, Uninstall and the Expect steps follow.
func NewInstallation(ctx context.Context, in OperandCleanupSpecInput, mode operatorsv1alpha1.InstallModeType) *Installation {
	return NewInstallationFor(ctx, FromGinkgo(), in, mode)
}

// NewInstallationFor is NewInstallation in any test t (e.g. FromTesting in an e2e-framework assessment).
func NewInstallationFor(ctx context.Context, t T, in OperandCleanupSpecInput, mode operatorsv1alpha1.InstallModeType) *Installation {
	g := t.Gomega()
	g.Expect(in.defaults()).To(gomega.Succeed())
	r := &Installation{t: t, g: g, in: in, c: in.Environment().Client}
	if p := in.Environment().Provider; p != nil && p.RESTConfig() != nil {
		if cs, err := kubernetes.NewForConfig(p.RESTConfig()); err == nil {
			r.logs = olm.PodLogsOf(cs)
		}
	}
	r.lockAPIs(ctx, mode)
	defer r.phase("namespaces")()
	r.l, r.all = newLayout(ctx, t, r.c, in.Name, mode)
	return r
}

// phase times one phase of the test for the time budget (framework/budget); call the result when it
// ends.
func (r *Installation) phase(name string) func() { return phase(r.t, name) }

// within is the timeout of a wait in the current phase (see within).
func (r *Installation) within(d time.Duration) time.Duration { return within(r.t, d) }

// phase times one phase of t for the time budget; call the result when it ends. A mutation check
// records no timings (budgeted) but which wait the case is in (Mutant.CaughtBy).
func phase(t T, name string) func() {
	if m, ok := t.(*recordingT); ok {
		return m.enter(Wait(name))
	}
	return budget.Start(t.Name(), name, t.Failed)
}

// within is the timeout of a wait in t's current phase: d, except in the wait of a mutation check that
// must catch the mutant (recordingT.timeout).
func within(t T, d time.Duration) time.Duration {
	if m, ok := t.(*recordingT); ok {
		return m.timeout(d)
	}
	return d
}

// install installs the bundle (cleanup nil keeps the bundle's spec.cleanup) and checks the finalizer
// follows the opt-in.
func (r *Installation) Install(ctx context.Context, bundleDir string, cleanup *bool) {
	// The quiet window of an opt-out is timed as its own phase, not as part of the install.
	endInstall := sync.OnceFunc(r.phase(string(WaitInstalled)))
	defer endInstall()
	r.t.Step("installing " + bundleDir + " in " + string(r.l.mode) + " mode into " + r.l.operator)
	b, err := bundle.Load(bundleDir)
	r.g.Expect(err).NotTo(HaveOccurred())
	r.g.Expect(supports(r.in.Environment().Provider, b.CSV)).To(Succeed())
	// Registered before the install: a CSV the install created and then gave up on (it never
	// Succeeded) is removed too, with cleanup disabled, before the spec's namespaces go and its API
	// locks are released. Left to the namespace's deletion, it ran its cleanup unlocked.
	r.t.Cleanup(func(ctx context.Context) {
		if r.csv == nil {
			r.removeCSV(ctx, types.NamespacedName{Namespace: r.l.operator, Name: b.CSV.Name})
		}
	})
	// An install that failed (an operator crash-looping at start) leaves artifacts too, every log of the
	// operator's runs among them, collected before the CSV above is removed.
	r.t.Cleanup(func(ctx context.Context) {
		if r.csv == nil {
			collectOnFailure(ctx, r.t, r.in.Environment, r.all...)
		}
	})
	if r.operatorLog == nil {
		r.operatorLog, err = keepOperatorLog(ctx, r.t, r.in.Environment().Provider, r.l.operator, func() *operatorsv1alpha1.ClusterServiceVersion {
			if r.csv != nil {
				return r.csv
			}
			return b.CSV
		})
		r.g.Expect(err).NotTo(HaveOccurred(), "keep the operator's log")
	}
	csv, err := olm.InstallBundle(ctx, olm.InstallBundleInput{Client: r.c, BundleDir: bundleDir, Namespace: r.l.operator,
		InstallMode: r.l.mode, TargetNamespaces: r.targetsForInstall(), Cleanup: cleanup, Timeout: r.within(r.in.Timeout), Logs: r.logs})
	r.g.Expect(readable(err)).To(Succeed())
	r.csv = csv
	r.csvUIDs = append(r.csvUIDs, csv.UID)
	r.t.Cleanup(r.forceUninstall)
	// Registered after forceUninstall, so it runs before it: artifacts show the state that failed.
	r.t.Cleanup(func(ctx context.Context) { collectOnFailure(ctx, r.t, r.in.Environment, r.all...) })
	optedIn := cleanup != nil && *cleanup
	r.waitCleanupFinalizer(ctx, optedIn)
	endInstall()
	if !optedIn {
		r.expectNoCleanupFinalizerAdded(ctx)
	}
}

func (r *Installation) targetsForInstall() []string {
	if r.l.mode == operatorsv1alpha1.InstallModeTypeOwnNamespace || r.l.mode == operatorsv1alpha1.InstallModeTypeAllNamespaces {
		return nil
	}
	return r.l.targets
}

// ExpectCleanupFinalizer: with the opt-in the finalizer appears; without it, it goes (or never comes)
// and is not added during the quiet window.
func (r *Installation) ExpectCleanupFinalizer(ctx context.Context, want bool) {
	r.waitCleanupFinalizer(ctx, want)
	if !want {
		r.expectNoCleanupFinalizerAdded(ctx)
	}
}

func (r *Installation) getCSV(ctx context.Context) func() (*operatorsv1alpha1.ClusterServiceVersion, error) {
	return func() (*operatorsv1alpha1.ClusterServiceVersion, error) {
		return olm.GetCSV(ctx, r.c, r.csv.Namespace, r.csv.Name)
	}
}

func (r *Installation) waitCleanupFinalizer(ctx context.Context, want bool) {
	has := matchers.HaveFinalizer(CleanupFinalizer)
	if !want {
		has = Not(has)
	}
	r.g.Eventually(r.getCSV(ctx)).WithContext(ctx).WithTimeout(r.within(r.in.Timeout)).Should(has)
}

func (r *Installation) expectNoCleanupFinalizerAdded(ctx context.Context) {
	defer r.phase("quiet")()
	r.g.Consistently(r.getCSV(ctx)).WithContext(ctx).WithTimeout(intervals.Get(intervals.Quiet)).
		ShouldNot(matchers.HaveFinalizer(CleanupFinalizer), "without the opt-in the cleanup finalizer must not be added")
}

func (r *Installation) SetCleanup(ctx context.Context, enabled bool) {
	r.t.Step("setting spec.cleanup.enabled to " + map[bool]string{true: "true", false: "false"}[enabled])
	r.g.Eventually(func() error {
		csv, err := olm.GetCSV(ctx, r.c, r.csv.Namespace, r.csv.Name)
		if err != nil {
			return err
		}
		csv.Spec.Cleanup.Enabled = enabled
		return r.c.Update(ctx, csv)
	}).WithContext(ctx).Should(Succeed())
}

// createOperands creates the samples in every namespace of the layout and waits until the operator
// has taken charge of those it watches.
func (r *Installation) CreateOperands(ctx context.Context) {
	defer r.phase(string(WaitReconciled))()
	r.t.Step("creating operands in " + joinNames(r.l.sampleNamespaces(r.all)))
	r.ops = r.createSamples(ctx, r.in.Samples, r.l.sampleNamespaces(r.all)...)
	if r.in.Reconciled == nil {
		warnf(r.t, noReconciledCheck)
		return
	}
	watched, _ := r.ops.where(r.WatchedNamespaces(), r.Global())
	expectReconciled(ctx, r.t, r.in, watched, r.crashLoopCheck(ctx), func() string { return olm.DescribeOperatorLogs(ctx, r.c, r.logs, r.csv) })
}

// expectReconciled waits until in.Reconciled holds for each of objs; crashing stops the wait once the
// operator crash-loops, and operator (read when a wait fails) describes it.
func expectReconciled(ctx context.Context, t T, in OperandCleanupSpecInput, objs []*unstructured.Unstructured, crashing func() error, operator func() string) {
	c := in.Environment().Client
	for _, o := range objs {
		t.Gomega().Eventually(func() error {
			if err := crashing(); err != nil {
				return err
			}
			return in.Reconciled(ctx, c, o)
		}).WithContext(ctx).WithTimeout(within(t, in.Timeout)).
			Should(Succeed(), func() string {
				return fmt.Sprintf("operator should reconcile %s %s; operator: %s", o.GetKind(), describeKey(o), operator())
			})
	}
}

// noReconciledCheck is the warning of a case whose input has no Reconciled check.
const noReconciledCheck = "OperandCleanupSpecInput.Reconciled is not set: these specs cannot tell an operator that never " +
	"reconciles from one that works (its samples are deleted as easily without it). Set it to check what your " +
	"operator does for a sample: its finalizer and something it made (docs/use-from-your-operator-repo.md)"

// createSamples creates the samples in the namespaces once the operator's webhooks can be called
// (WaitWebhooksServing, once per installation), each create tried again while a webhook cannot be
// reached yet: OLM reports the install before the webhook Service is routed.
func (r *Installation) createSamples(ctx context.Context, samples func(string) []*unstructured.Unstructured, namespaces ...string) *operands {
	window := intervals.Get(intervals.WebhookServing)
	if !r.webhooksServing {
		r.g.Expect(readable(olm.WaitWebhooksServing(ctx, r.c, r.logs, r.csv, window))).To(Succeed())
		r.webhooksServing = true
	}
	create := func(ctx context.Context, obj client.Object) error {
		return createRetryingWebhooks(ctx, r.c, obj, window, func() string {
			if ok, why := olm.WebhooksServing(ctx, r.c, r.csv); !ok {
				return why + "; operator: " + olm.DescribeOperatorLogs(ctx, r.c, r.logs, r.csv)
			}
			return "its Service has a ready endpoint, yet the API server cannot reach it (the Service's port or targetPort, " +
				"the operator's serving certificate?); operator: " + olm.DescribeOperatorLogs(ctx, r.c, r.logs, r.csv)
		})
	}
	return createSamples(ctx, r.g, r.c, create, samples, namespaces...)
}

// crashCheckInterval is how often a wait on the operator's work looks whether it crash-loops (reads
// of its Deployments and pods).
const crashCheckInterval = time.Second

// crashLoopCheck returns a check for a wait on the operator's work: at most every crashCheckInterval,
// an error that stops the wait (Gomega's StopTrying) once the operator crash-loops
// (olm.CrashLooping), naming the crash instead of waiting out the timeout.
func (r *Installation) crashLoopCheck(ctx context.Context) func() error {
	return crashLoopCheck(ctx, r.c, r.logs, func() *operatorsv1alpha1.ClusterServiceVersion { return r.csv })
}

// crashLoopCheck is the check for the operator of the CSV csv returns (none while nil).
func crashLoopCheck(ctx context.Context, c client.Client, logs olm.PodLogs, csv func() *operatorsv1alpha1.ClusterServiceVersion) func() error {
	var last time.Time
	return func() error {
		csv := csv()
		if csv == nil || time.Since(last) < crashCheckInterval {
			return nil
		}
		last = time.Now()
		if v := olm.CrashLooping(ctx, c, logs, csv); v != "" {
			return StopTrying(fmt.Sprintf("the operator of CSV %s/%s is crash-looping (the wait stops after %d exits): %s. "+
				"Fix what it logged; every run's whole log is in the failed spec's artifacts", csv.Namespace, csv.Name, olm.CrashLoopExits, v))
		}
		return nil
	}
}

func (r *Installation) Global() bool {
	return r.l.mode == operatorsv1alpha1.InstallModeTypeAllNamespaces
}

// watchedNamespaces are the namespaces whose operands cleanup removes.
func (r *Installation) WatchedNamespaces() []string {
	if r.Global() {
		return r.all
	}
	return r.l.targets
}

// uninstall deletes the CSV without waiting.
func (r *Installation) Uninstall(ctx context.Context) {
	defer r.phase("uninstall-requested")()
	r.t.Step("uninstalling: deleting CSV " + r.csv.Name)
	r.refuseForeignOperands(ctx)
	r.g.Expect(olm.Uninstall(ctx, olm.UninstallInput{Client: r.c, CSV: r.csv})).To(Succeed())
}

// expectUninstalled waits for the CSV and the operator's Deployments to be gone.
func (r *Installation) ExpectUninstalled(ctx context.Context) {
	defer r.phase(string(WaitUninstalled))()
	r.g.Eventually(func() error {
		_, err := olm.GetCSV(ctx, r.c, r.csv.Namespace, r.csv.Name)
		return err
	}).WithContext(ctx).WithTimeout(r.within(r.in.Timeout)).Should(matchers.BeGone(), func() string { return r.explainCSVStays(ctx) })
	for _, d := range r.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		r.g.Eventually(func() error {
			return r.c.Get(ctx, types.NamespacedName{Namespace: r.csv.Namespace, Name: d.Name}, &appsv1.Deployment{})
		}).WithContext(ctx).WithTimeout(r.within(r.in.Timeout)).Should(matchers.BeGone(), "operator Deployment %s should be gone", d.Name)
		// On clusters with nodes the operator runs until its pods have terminated (grace period).
		selector := d.Spec.Selector
		r.g.Eventually(func() ([]string, error) { return r.podsOf(ctx, selector) }).WithContext(ctx).WithTimeout(r.within(r.in.Timeout)).
			Should(BeEmpty(), "pods of operator Deployment %s should be gone", d.Name)
	}
}

// explainCSVStays says why the CSV is still there: its state (a cleanup still waiting lists what it
// waits for) and what keeps each of the spec's operands in the watched namespaces (describeOperand).
func (r *Installation) explainCSVStays(ctx context.Context) string {
	msg := fmt.Sprintf("CSV %s/%s should be gone", r.csv.Namespace, r.csv.Name)
	if csv, err := olm.GetCSV(ctx, r.c, r.csv.Namespace, r.csv.Name); err == nil {
		msg += "; it is " + matchers.DescribeCSV(csv)
	}
	if r.ops != nil {
		inside, _ := r.ops.where(r.WatchedNamespaces(), r.Global())
		if left := r.explainOperands(ctx, inside); left != "" {
			msg += "; " + left
		}
	}
	return msg
}

// podsOf lists the pods (in the CSV's namespace) a Deployment selector matches.
func (r *Installation) podsOf(ctx context.Context, selector *metav1.LabelSelector) ([]string, error) {
	if selector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := r.c.List(ctx, pods, client.InNamespace(r.csv.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	return out, nil
}

// ExpectKept checks that nothing deletes the operands, for a moment (cleanup does not come late): each
// still exists and is not being deleted. Existing is not enough: once the operator is gone, a deleted
// operand stays Terminating for ever, there but lost. A failure names the request that deleted each
// one, where the cluster keeps an audit log (deletedBy).
func (r *Installation) ExpectKept(ctx context.Context, objs []*unstructured.Unstructured) {
	defer r.phase("quiet")()
	r.g.Consistently(func() ([]string, error) { return r.ops.deleted(ctx, objs) }).WithContext(ctx).
		WithTimeout(intervals.Get(intervals.Quiet)).Should(BeEmpty(), func() string {
		return "operands that must be kept, not deleted: " + names(objs) + deletedBy(ctx, r.in.Environment().Provider, r.c, objs)
	})
}

// expectStays checks the operands still exist, and stay for a moment, being deleted or not.
func (r *Installation) expectStays(ctx context.Context, objs []*unstructured.Unstructured) {
	defer r.phase("quiet")()
	r.g.Consistently(func() ([]string, error) { return r.ops.existing(ctx, objs) }).WithContext(ctx).
		WithTimeout(intervals.Get(intervals.Quiet)).Should(HaveLen(len(objs)), "operands that must stay: %s", names(objs))
}

// expectRemoved waits for the operands to be gone and for the operator's finalizer to have done its job.
func (r *Installation) ExpectRemoved(ctx context.Context, objs []*unstructured.Unstructured) {
	expectRemoved(ctx, r.t, r.in, r.ops, objs, r.crashLoopCheck(ctx), r.operatorLog)
}

// expectRemoved waits (in the phase WaitRemoved) until objs, operands of ops, are gone and in.Finalized
// holds for each; crashing stops the wait once the operator crash-loops (one that crashes in its
// finalizer, a panic). A failure quotes, for each operand left, the last error its operator logged
// about it (log, when not nil), and for each operand gone without its finalizer's work, the write that let
// it go (letGo).
func expectRemoved(ctx context.Context, t T, in OperandCleanupSpecInput, ops *operands, objs []*unstructured.Unstructured,
	crashing func() error, log func() (string, error)) {
	defer phase(t, string(WaitRemoved))()
	g := t.Gomega()
	g.Eventually(func() ([]string, error) {
		if err := crashing(); err != nil {
			return nil, err
		}
		return ops.existing(ctx, objs)
	}).WithContext(ctx).WithTimeout(within(t, in.Timeout)).Should(BeEmpty(), func() string {
		left, err := ops.live(ctx, objs)
		if err != nil {
			left = objs // the quote then covers every operand
		}
		return "operands that cleanup must remove" + operatorSaid(log, left)
	})
	if in.Finalized == nil {
		warnf(t, "OperandCleanupSpecInput.Finalized is not set: these specs cannot tell a finalizer that "+
			"cleans up from one that only removes itself — one that skips its work passes, unless what it should have "+
			"removed is an object the leftovers check attributes to the installation. Set it to check what your finalizer "+
			"undoes (specs.Gone(gvk, name) for an object it deletes; docs/use-from-your-operator-repo.md)")
		return
	}
	for _, o := range objs {
		g.Eventually(func() error { return in.Finalized(ctx, ops.c, o) }).WithContext(ctx).WithTimeout(within(t, in.Timeout)).
			Should(Succeed(), func() string {
				return fmt.Sprintf("the operator's finalizer should have cleaned up after %s %s", o.GetKind(), describeKey(o)) +
					letGo(ctx, in.Environment().Provider, ops.c, o) + operatorSaid(log, []*unstructured.Unstructured{o})
			})
	}
}

// forceUninstall runs at the end of a spec: aborts a cleanup still going, releases held operands,
// removes the CSV, then releases the spec's own samples (operands.release), so namespaces and CRDs
// can be deleted.
func (r *Installation) forceUninstall(ctx context.Context) {
	if r.ops != nil {
		for _, o := range r.ops.items {
			if err := hold.Release(ctx, r.c, o); err != nil {
				r.t.Logf("cleanup: %v", err)
			}
		}
	}
	r.removeCSV(ctx, types.NamespacedName{Namespace: r.csv.Namespace, Name: r.csv.Name})
	if r.ops != nil {
		r.ops.release(ctx, r.t.Logf)
	}
}

// removeCSV deletes the spec's CSV at key (in the spec's own operator namespace) with cleanup
// disabled first, so that its deletion deletes no operands, and waits until it is gone.
func (r *Installation) removeCSV(ctx context.Context, key types.NamespacedName) {
	var csv *operatorsv1alpha1.ClusterServiceVersion
	err := retry.RetryOnConflict(retry.DefaultRetry, func() (err error) {
		if csv, err = olm.GetCSV(ctx, r.c, key.Namespace, key.Name); err != nil {
			return err
		}
		csv.Spec.Cleanup.Enabled = false
		return r.c.Update(ctx, csv)
	})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			r.t.Logf("cleanup: CSV %s left in place: disabling its operand cleanup failed: %v", key, err)
		}
		return
	}
	_ = r.c.Delete(ctx, csv, client.PropagationPolicy("Background"), &client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		client.Preconditions{UID: &csv.UID})
	// A global operator left behind would copy its CSV into the next specs' namespaces.
	_ = olm.WaitForCSVGone(ctx, r.c, client.ObjectKeyFromObject(csv), intervals.Get(intervals.Gone))
}

func joinNames(ns []string) string {
	out := ""
	for i, n := range ns {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// Operands returns the operands created so far, split into those in the namespaces (cluster-scoped
// ones count as inside when clusterScopedInside) and the rest.
func (r *Installation) Operands(namespaces []string, clusterScopedInside bool) (inside, outside []*unstructured.Unstructured) {
	if r.ops == nil {
		return nil, nil
	}
	return r.ops.where(namespaces, clusterScopedInside)
}

// Track adds objects the spec created itself to the operands the installation checks and releases.
func (r *Installation) Track(objs ...*unstructured.Unstructured) {
	if r.ops == nil {
		r.ops = &operands{c: r.c}
	}
	r.ops.items = append(r.ops.items, objs...)
}

// Hold keeps the operand pending deletion (a finalizer of the spec's own) until Release.
func (r *Installation) Hold(ctx context.Context, obj *unstructured.Unstructured) {
	r.g.Expect(hold.Put(ctx, r.c, obj)).To(Succeed())
}

// Release lets a held operand go.
func (r *Installation) Release(ctx context.Context, obj *unstructured.Unstructured) {
	r.g.Expect(hold.Release(ctx, r.c, obj)).To(Succeed())
}

// CSV is the installed CSV as last read by the installation.
func (r *Installation) CSV() *operatorsv1alpha1.ClusterServiceVersion { return r.csv }

// OperatorNamespace is where the operator is installed.
func (r *Installation) OperatorNamespace() string { return r.l.operator }

// Namespaces are every namespace the installation created (operator, targets, untouched).
func (r *Installation) Namespaces() []string { return r.all }
