package cleanup

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/operandcleanup"
)

// Lifecycle races found by adversarial sequences (issue 12), replayed against real OLM and the namespace
// controller. The controller's own suite (pkg/operandcleanup) has a regression spec for each of the six
// cases and the randomized lifecycle test; these show the two that depend on OLM and kube-controller-manager.
var _ = Describe("Operand cleanup in the middle of a lifecycle", Label("operand-cleanup", "cleanup-lifecycle"), func() {
	It("deletes nothing when a pending upgrade target is deleted, and keeps the opt-in for the next upgrade", func(ctx context.Context) {
		r := specs.NewInstallation(ctx, widgetOperator, operatorsv1alpha1.InstallModeTypeOwnNamespace)
		r.Install(ctx, widgetOperator.BundleDir, ptr.To(true))
		r.CreateOperands(ctx)
		watched, _ := r.Operands(r.WatchedNamespaces(), r.Global())
		v1 := r.CSV()

		next := r.StartUpgrade(ctx, bundles.Dir("widget-operator", "v0.2.0"), true)
		Eventually(liveCSV(ctx, next)).WithContext(ctx).Should(matchers.HaveCleanupEnabled(true), "the opt-in is handed over to %s", next.Name)
		Eventually(liveCSV(ctx, v1)).WithContext(ctx).Should(matchers.HavePhase(operatorsv1alpha1.CSVPhaseReplacing))

		By("deleting " + next.Name + " while " + v1.Name + " is Replacing and still runs the operator")
		Expect(k8s.Delete(ctx, next)).To(Succeed())
		Eventually(func() error { _, err := liveCSV(ctx, next)(); return err }).WithContext(ctx).WithTimeout(time.Minute).Should(matchers.BeGone())
		Consistently(func() error { return widgetsPresent(ctx, watched) }).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())
		Expect(liveCSV(ctx, v1)()).To(matchers.HaveCleanupEnabled(true), "the user's opt-in stays on %s", v1.Name)

		By("upgrading again: the new version inherits the opt-in, and uninstalling it cleans up")
		r.Upgrade(ctx, bundles.Dir("widget-operator", "v0.2.0"))
		Eventually(r.LiveCSV(ctx)).WithContext(ctx).Should(And(matchers.HaveCleanupEnabled(true), matchers.HaveFinalizer(specs.CleanupFinalizer)))
		r.ExpectKept(ctx, watched)
		r.Uninstall(ctx)
		r.ExpectRemoved(ctx, watched)
		r.ExpectUninstalled(ctx)
	})

	It("completes while OLM is down, and the CSV held by OLM's finalizer says the cleanup is over", Serial, func(ctx context.Context) {
		r := specs.NewInstallation(ctx, widgetOperator, operatorsv1alpha1.InstallModeTypeOwnNamespace)
		r.Install(ctx, widgetOperator.BundleDir, ptr.To(true))
		r.CreateOperands(ctx)
		watched, _ := r.Operands(r.WatchedNamespaces(), r.Global())

		By("stopping olm-operator, then uninstalling")
		restart := stopOLM(ctx)
		r.Uninstall(ctx)
		r.ExpectRemoved(ctx, watched)
		Eventually(r.LiveCSV(ctx)).WithContext(ctx).Should(And(
			matchers.HavePhase(operatorsv1alpha1.CSVPhaseDeleting, operandcleanup.ReasonCleanupCompleted),
			Not(matchers.HaveFinalizer(specs.CleanupFinalizer)),
			matchers.HaveFinalizer(olmCSVFinalizer)), "OLM is down: its finalizer still holds the CSV, whose status must tell the cleanup is over")
		Expect(r.LiveCSV(ctx)()).To(matchers.HavePendingCount(0))

		By("starting olm-operator again: it releases the CSV")
		restart(ctx)
		r.ExpectUninstalled(ctx)
	})

	It("finishes when the target namespace is deleted together with the CSV: the operator keeps its Role there", specs.ModeDecorators(operatorsv1alpha1.InstallModeTypeSingleNamespace, func(ctx context.Context) {
		r := specs.NewInstallation(ctx, widgetOperator, operatorsv1alpha1.InstallModeTypeSingleNamespace)
		r.Install(ctx, widgetOperator.BundleDir, ptr.To(true))
		r.CreateOperands(ctx)
		target := r.WatchedNamespaces()[0]
		inTarget, _ := r.Operands([]string{target}, false)
		for _, o := range inTarget {
			setHold(ctx, o, true) // the operator's finalizer waits until the namespace controller did its part
		}

		r.Uninstall(ctx)
		By("deleting the target namespace " + target + " while its Widgets wait for the operator")
		Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target}})).To(Succeed())
		Eventually(func() ([]string, error) { return rolesBeingDeleted(ctx, target) }).WithContext(ctx).WithTimeout(time.Minute).
			ShouldNot(BeEmpty(), "the namespace controller should have requested the deletion of the operator's Roles in %s", target)

		By("letting the operator finish: it still has its Role in " + target)
		for _, o := range inTarget {
			setHold(ctx, o, false)
		}
		r.ExpectRemoved(ctx, inTarget)
		r.ExpectUninstalled(ctx)
		Eventually(func() error {
			return k8s.Get(ctx, types.NamespacedName{Name: target}, &corev1.Namespace{})
		}).WithContext(ctx).WithTimeout(2*time.Minute).Should(matchers.BeGone(), "namespace %s should finish terminating", target)
	})...)
})

// stopOLM stops olm-operator (through the provider when it can, else its in-cluster Deployment) once the
// framework's namespaces finished terminating, and returns the function that starts it again; it is also
// started again when the spec ends early.
func stopOLM(ctx context.Context) func(context.Context) {
	// Namespaces deleted while olm-operator is down would leave their OperatorGroups' ClusterRoles for
	// ever: it deletes them only when it sees the group go.
	if err := kube.WaitCreatedNamespacesGone(ctx, k8s); err != nil {
		GinkgoWriter.Printf("stopping olm-operator anyway: %v\n", err)
	}
	var start func(context.Context) error
	if s, ok := cl.Provider.(cluster.OLMStopper); ok {
		Expect(s.StopOLM(ctx)).To(Succeed())
		start = s.StartOLM
	} else {
		Expect(olm.StopInCluster(ctx, k8s, 2*time.Minute)).To(Succeed())
		start = func(ctx context.Context) error { return olm.StartInCluster(ctx, k8s, 3*time.Minute) }
	}
	started := false
	restart := func(ctx context.Context) {
		if !started {
			started = true
			Expect(start(ctx)).To(Succeed(), "starting olm-operator again")
		}
	}
	DeferCleanup(restart)
	return restart
}

func liveCSV(ctx context.Context, csv *operatorsv1alpha1.ClusterServiceVersion) func() (*operatorsv1alpha1.ClusterServiceVersion, error) {
	return func() (*operatorsv1alpha1.ClusterServiceVersion, error) {
		return olm.GetCSV(ctx, k8s, csv.Namespace, csv.Name)
	}
}

// widgetsPresent fails naming the first object that is gone or being deleted.
func widgetsPresent(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(o.GroupVersionKind())
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
		if cur.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s %s is being deleted", o.GetKind(), client.ObjectKeyFromObject(o))
		}
	}
	return nil
}

// setHold turns the fixture knob spec.hold (the operator's finalizer waits while it is true).
func setHold(ctx context.Context, o *unstructured.Unstructured, hold bool) {
	patch := []byte(fmt.Sprintf(`{"spec":{"hold":%t}}`, hold))
	Expect(k8s.Patch(ctx, o.DeepCopy(), client.RawPatch(types.MergePatchType, patch))).To(Succeed(), "spec.hold of %s", client.ObjectKeyFromObject(o))
}

// rolesBeingDeleted lists the Roles in ns that have a deletionTimestamp and the controller's RBAC finalizer.
func rolesBeingDeleted(ctx context.Context, ns string) ([]string, error) {
	roles := &rbacv1.RoleList{}
	if err := k8s.List(ctx, roles, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []string
	for _, role := range roles.Items {
		if role.DeletionTimestamp != nil && controllerutil.ContainsFinalizer(&role, operandcleanup.RBACFinalizer) {
			out = append(out, role.Name)
		}
	}
	return out, nil
}

// olmCSVFinalizer is the finalizer OLM (v0.27+) puts on every CSV it manages.
const olmCSVFinalizer = "operators.coreos.com/csv-cleanup"
