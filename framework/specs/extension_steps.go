package specs

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/hold"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/leftovers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// CreateOperands creates the samples in both namespaces and waits until the operator (cluster-wide
// under OLM v1) has taken charge of each.
func (x *Extension) CreateOperands(ctx context.Context) {
	defer phase(x.t, string(WaitReconciled))()
	x.t.Step("creating operands in " + joinNames(x.all))
	x.ops = createSamples(ctx, x.g, x.c, func(ctx context.Context, o client.Object) error { return x.c.Create(ctx, o) }, x.in.Samples, x.all...)
	if x.in.Reconciled == nil {
		warnf(x.t, noReconciledCheck)
		return
	}
	expectReconciled(ctx, x.t, x.in, x.ops.items, x.crashLoopCheck(ctx), x.describeOperator(ctx))
}

// Operands are the samples CreateOperands made.
func (x *Extension) Operands() []*unstructured.Unstructured { return x.ops.items }

// DeleteOperands deletes every sample (the order an operator team can use with OLM v1 today: the CRs
// first, while the operator runs) and waits until each is gone and finalized (in.Finalized).
func (x *Extension) DeleteOperands(ctx context.Context) {
	x.t.Step("deleting the custom resources while the operator runs")
	for _, o := range x.ops.items {
		uid := o.GetUID()
		x.g.Expect(client.IgnoreNotFound(x.c.Delete(ctx, o.DeepCopy(), client.Preconditions{UID: &uid}))).To(Succeed())
	}
	expectRemoved(ctx, x.t, x.in, x.ops, x.ops.items, x.crashLoopCheck(ctx), x.operatorLog)
}

// Uninstall deletes the ClusterExtension with propagation policy (Background is what kubectl delete
// does) and returns when it was deleted.
func (x *Extension) Uninstall(ctx context.Context, policy metav1.DeletionPropagation) time.Time {
	defer phase(x.t, "uninstall-requested")()
	x.t.Step(fmt.Sprintf("uninstalling: deleting ClusterExtension %s (propagation %s)", x.name, policy))
	uid := x.ce.GetUID()
	x.g.Expect(x.c.Delete(ctx, x.ce.DeepCopy(), client.PropagationPolicy(policy), client.Preconditions{UID: &uid})).To(Succeed())
	return time.Now()
}

// ExpectUninstalled waits until the ClusterExtension is gone (foreground false) or being deleted, and
// the operator's Deployments and pods are gone: from then on nothing runs the operator's finalizers.
func (x *Extension) ExpectUninstalled(ctx context.Context, foreground bool) {
	defer phase(x.t, string(WaitUninstalled))()
	timeout := within(x.t, x.in.Timeout)
	if !foreground {
		x.g.Eventually(func() error {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
			err := x.c.Get(ctx, client.ObjectKeyFromObject(x.ce), live)
			if err == nil {
				conds, _ := olmv1.Conditions(live)
				x.lastConditions = olmv1.DescribeConditions(conds)
			}
			return err
		}).WithContext(ctx).WithTimeout(timeout).Should(matchers.BeGone(), func() string { return x.explainExtensionStays(ctx) })
	}
	for _, d := range x.csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		key := types.NamespacedName{Namespace: x.all[0], Name: d.Name}
		x.g.Eventually(func() error { return x.c.Get(ctx, key, &appsv1.Deployment{}) }).WithContext(ctx).WithTimeout(timeout).
			Should(matchers.BeGone(), func() string { return x.explainDeploymentStays(ctx, key) })
		if d.Spec.Selector == nil {
			continue
		}
		x.g.Eventually(func() ([]corev1.Pod, error) {
			pods := &corev1.PodList{}
			err := x.c.List(ctx, pods, client.InNamespace(x.all[0]), client.MatchingLabels(d.Spec.Selector.MatchLabels))
			return pods.Items, err
		}).WithContext(ctx).WithTimeout(timeout).Should(BeEmpty(), "pods of operator Deployment %s should be gone", key)
	}
}

// explainExtensionStays says why the ClusterExtension is still there: its finalizers and conditions.
func (x *Extension) explainExtensionStays(ctx context.Context) string {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	if err := x.c.Get(ctx, client.ObjectKeyFromObject(x.ce), live); err != nil {
		return fmt.Sprintf("ClusterExtension %s should be gone (%v)", x.name, err)
	}
	conds, _ := olmv1.Conditions(live)
	return fmt.Sprintf("ClusterExtension %s should be gone; it has deletionTimestamp %v, finalizers %v, conditions: %s",
		x.name, live.GetDeletionTimestamp(), live.GetFinalizers(), olmv1.DescribeConditions(conds))
}

// explainDeploymentStays says why the operator's Deployment is still there: what owns it and whether
// anything deletes it (no ownerReferences and no deletionTimestamp: orphaned, nothing ever will), and
// the ClusterExtension's state (gone or not, finalizers, the operand-cleanup controller's condition).
func (x *Extension) explainDeploymentStays(ctx context.Context, key types.NamespacedName) string {
	msg := fmt.Sprintf("operator Deployment %s should be gone with ClusterExtension %s", key, x.name)
	dep := &appsv1.Deployment{}
	if err := x.c.Get(ctx, key, dep); err != nil {
		msg += fmt.Sprintf("; reading it: %v", err)
	} else {
		state := ownerState(dep)
		msg += fmt.Sprintf("; it has %s; finalizers %v; resourceVersion %s; labels %v", state, dep.Finalizers, dep.ResourceVersion, dep.Labels)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(olmv1.ClusterExtensionGVK)
	switch err := x.c.Get(ctx, client.ObjectKeyFromObject(x.ce), live); {
	case apierrors.IsNotFound(err):
		msg += fmt.Sprintf("; ClusterExtension %s (uid %s) is gone", x.name, x.ce.GetUID())
	case err != nil:
		msg += fmt.Sprintf("; reading ClusterExtension %s: %v", x.name, err)
	default:
		msg += fmt.Sprintf("; ClusterExtension %s exists (uid %s), deletionTimestamp %v, finalizers %v", x.name, live.GetUID(), live.GetDeletionTimestamp(), live.GetFinalizers())
		conds, _ := olmv1.Conditions(live)
		found := false
		for _, c := range conds {
			if c.Type == uninstallCondition {
				msg += fmt.Sprintf(", condition %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
				found = true
			}
		}
		if !found {
			msg += ", no " + uninstallCondition + " condition; conditions: " + olmv1.DescribeConditions(conds)
		}
	}
	return msg
}

// Verdicts gives each sample its verdict (olmv1.Judge): finalized by its operator, removed before the
// operator ran, stuck Terminating or not deleted, quoting for one the operator did not finalize what
// it logged last about it, and naming for one removed before its operator ran the write that let it go
// where the cluster keeps an audit log (cluster.AuditLogs). Call it once the operator stopped
// (ExpectUninstalled).
func (x *Extension) Verdicts(ctx context.Context) []olmv1.CRVerdict {
	finalized := x.in.Finalized
	if finalized == nil {
		finalized = func(context.Context, client.Client, *unstructured.Unstructured) error { return nil }
	}
	opts := []olmv1.JudgeOption{olmv1.OperatorLog(x.operatorLog)}
	if a, ok := x.in.Environment().Provider.(cluster.AuditLogs); ok {
		opts = append(opts, olmv1.AuditLog(a.AuditLog))
	}
	vs, err := olmv1.Judge(ctx, x.c, x.ops.items, finalized, opts...)
	x.g.Expect(err).NotTo(HaveOccurred())
	return vs
}

// ExpectCRDsGone waits until the bundle's CRDs are gone, naming the one left and its state.
func (x *Extension) ExpectCRDsGone(ctx context.Context) {
	defer phase(x.t, "crds-gone")()
	x.g.Expect(readable(crdsGone(ctx, x.c, intervals.GarbageCollecting, x.crds...))).To(Succeed(),
		"the CRDs of ClusterExtension %s should go with it", x.name)
}

// SnapshotBeforeInstall takes the "before" snapshot of ExpectNoLeftovers. Call it before Install.
func (x *Extension) SnapshotBeforeInstall(ctx context.Context) {
	defer phase(x.t, "snapshot")()
	s, err := leftovers.NewSnapshotter(x.in.Environment().Provider.RESTConfig())
	x.g.Expect(err).NotTo(HaveOccurred())
	x.snapper = s
	x.before, err = s.Take(ctx, x.leftoverNamespaces()...)
	x.g.Expect(err).NotTo(HaveOccurred(), "leftovers snapshot before install")
}

func (x *Extension) leftoverNamespaces() []string {
	return append(append([]string{}, x.all...), x.in.LeftoverNamespaces...)
}

// ExpectNoLeftovers waits until the uninstall left nothing behind but in.ExpectedLeftovers and what
// the spec itself made (the installer ServiceAccount and its binding, the ClusterCatalog), and fails
// listing each leftover: an object in the spec's namespaces, owned by the ClusterExtension (a CRD left
// Terminating, RBAC) or by a sample.
func (x *Extension) ExpectNoLeftovers(ctx context.Context) {
	defer phase(x.t, string(WaitLeftovers))()
	x.t.Step("checking the uninstalled extension left nothing behind")
	x.g.Expect(x.before).NotTo(BeNil(), "ExpectNoLeftovers needs SnapshotBeforeInstall before Install")
	ignore := []leftovers.Matcher{
		{Kind: "ServiceAccount", Namespace: x.all[0], Name: installerSA, Reason: "the installer ServiceAccount the spec made"},
		{Kind: "ClusterRoleBinding", Name: olmv1.InstallerBinding(x.all[0], installerSA), Reason: "the installer's binding the spec made"},
		{Kind: olmv1.ClusterCatalogGVK.Kind, Name: x.name, Reason: "the spec's ClusterCatalog"},
	}
	var last leftovers.Report
	x.g.Eventually(func() error {
		after, err := x.snapper.Take(ctx, x.leftoverNamespaces()...)
		if err != nil {
			return err
		}
		scope := leftovers.Scope{Namespaces: x.all, UIDs: append([]types.UID{}, x.ceUIDs...)}
		for _, o := range x.ops.items {
			scope.UIDs = append(scope.UIDs, o.GetUID())
		}
		last = leftovers.Diff(x.before, after, leftovers.DiffOptions{Scope: scope, Expected: x.in.ExpectedLeftovers, Ignore: ignore})
		if !last.Clean() {
			return leftoversError{last}
		}
		return nil
	}).WithContext(ctx).WithTimeout(within(x.t, x.in.LeftoversTimeout)).WithPolling(2*time.Second).Should(Succeed(),
		"an OLM v1 uninstall must leave nothing behind (declare known leftovers in OperandCleanupSpecInput.ExpectedLeftovers)")
	x.t.Logf("%s", last.String())
}

// Reinstall creates the ClusterExtension again (same name and version, these annotations) once the
// previous one is gone, and waits until it is Installed and the operator runs.
func (x *Extension) Reinstall(ctx context.Context, annotations map[string]string) {
	defer phase(x.t, "reinstall")()
	x.t.Step("reinstalling: ClusterExtension " + x.name + " again")
	pkg, _, _ := unstructured.NestedString(x.ce.Object, "spec", "source", "catalog", "packageName")
	version, _, _ := unstructured.NestedString(x.ce.Object, "spec", "source", "catalog", "version")
	x.create(ctx, pkg, version, annotations)
}

// forceUninstall runs at the end of a spec: releases the spec's holds, opts the ClusterExtension out of
// the controller's uninstall and deletes it,
// then releases the spec's samples (operands.release) so that the CRDs can go, and waits for them.
func (x *Extension) forceUninstall(ctx context.Context) {
	if x.ops != nil {
		for _, o := range x.ops.items {
			if err := hold.Release(ctx, x.c, o); err != nil {
				x.t.Logf("cleanup: %v", err)
			}
		}
	}
	if x.ce != nil {
		// Opted out first: the controller then releases what it holds at once, even mid-cleanup.
		optOut := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+UninstallAnnotation+`":null}}}`))
		if err := client.IgnoreNotFound(x.c.Patch(ctx, x.ce.DeepCopy(), optOut)); err != nil {
			x.t.Logf("cleanup: opt ClusterExtension %s out of %s: %v", x.name, UninstallAnnotation, err)
		}
		uid := x.ce.GetUID()
		err := x.c.Delete(ctx, x.ce.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			x.t.Logf("cleanup: delete ClusterExtension %s: %v", x.name, err)
		}
	}
	if x.ops != nil {
		x.ops.release(ctx, x.t.Logf)
	}
	// The ClusterExtension gone before the APIs are released: operator-controller keeps reconciling a
	// deleted one still held by finalizers, and would install its CRDs again under the next spec.
	if x.ce != nil {
		err := intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
			err := x.c.Get(ctx, client.ObjectKeyFromObject(x.ce), x.ce.DeepCopy())
			return apierrors.IsNotFound(err), x.explainExtensionStays(ctx)
		})
		if err != nil {
			x.t.Logf("cleanup: %v", err)
		}
	}
	if err := crdsGone(ctx, x.c, intervals.GarbageCollecting, x.crds...); err != nil {
		x.t.Logf("cleanup: %v", err)
	}
}

func (x *Extension) crashLoopCheck(ctx context.Context) func() error {
	return crashLoopCheck(ctx, x.c, x.logs, func() *operatorsv1alpha1.ClusterServiceVersion { return x.csv })
}

func (x *Extension) describeOperator(ctx context.Context) func() string {
	return func() string { return olm.DescribeOperatorLogs(ctx, x.c, x.logs, x.csv) }
}

// ExpectCRDsKept checks that every CRD of the bundle is still there and not being deleted.
func (x *Extension) ExpectCRDsKept(ctx context.Context) {
	for _, name := range x.crds {
		crd, err := liveCRD(ctx, x.c, name)
		x.g.Expect(err).NotTo(HaveOccurred())
		x.g.Expect(crd).NotTo(BeNil(), "CRD %s should be kept", name)
		x.g.Expect(crd.DeletionTimestamp).To(BeNil(), "CRD %s should be kept, not deleted (conditions %v)", name, crdConditions(crd))
	}
}
