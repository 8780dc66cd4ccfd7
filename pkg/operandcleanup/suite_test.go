package operandcleanup

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
)

// The suite runs the controller through Main, in-process, impersonating the ServiceAccount of the shipped
// manifests: every spec also proves the ClusterRole is sufficient. The resync backstop is set to 10m so
// that progress must come from watch events.
var (
	tenv          *testEnv
	ctrlUnderTest *runningController
	ctx           = context.Background()
	nsCounter     atomic.Int64
)

// suiteArgs are the flags of the controller under test.
var suiteArgs = []string{
	"--resync-interval=10m",
	"--max-pending-listed=5",
	"--status-update-interval=100ms",
	"--stall-timeout=10m",
	// A vanished operator is reported within 2× this (default 5 s): the OperatorGone specs wait for it.
	"--operator-check-interval=500ms",
	"--delete-concurrency=8",
	// Every pass over more than 3 operands spans pages, so the randomized lifecycle spec exercises the
	// paging and the per-page live verification, not only single-page passes.
	"--list-page-size=3",
	// Exercises the leader-election Role of the manifests too (released on stop, so restarts are quick).
	"--leader-elect",
	"--leader-election-namespace=" + operandcleanupconfig.Namespace,
}

func TestOperandCleanup(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyDuration(2 * time.Second)
	SetDefaultConsistentlyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "operand-cleanup controller")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(GinkgoLogr) // envtest's own logging; the controller gets its logger from ctx
	var err error
	tenv, err = startTestEnv()
	Expect(err).NotTo(HaveOccurred())
	Expect(tenv.installControllerRBAC(ctx)).To(Succeed())
	startSuiteController()
})

var _ = AfterSuite(func() {
	if ctrlUnderTest != nil {
		Expect(ctrlUnderTest.stop()).To(Succeed())
	}
	if tenv != nil {
		Expect(tenv.stop()).To(Succeed())
	}
})

func startSuiteController() {
	cfg := tenv.asServiceAccount(operandcleanupconfig.Namespace, operandcleanupconfig.ServiceAccount)
	ctrlUnderTest = startController(cfg, GinkgoLogr, suiteArgs...)
}

// restartController stops the suite's controller, runs between (the cluster changes while it is down)
// and starts it again.
//
// It returns once the new controller leads. A controller stopped while it was acquiring the Lease can
// leave it held by a holder that will never renew (its update reached the API server, its answer was
// cancelled: seen under stress-ng), and the new one then waits out the Lease's 15 s — as a restarted
// pod would. That wait is leader election's, not the controller's: counted in the specs' windows it
// made the randomized lifecycle spec report a hand-over that came late under load.
// The controller is started again even when between fails, so that later specs find it running.
func restartController(between func()) {
	Expect(ctrlUnderTest.stop()).To(Succeed())
	defer func() {
		left := leaseHolder() // "" when the stopped controller released the Lease
		startSuiteController()
		Eventually(leaseHolder).WithTimeout(time.Minute).ShouldNot(BeElementOf("", left),
			"the restarted controller should lead: Lease %s/%s is still held by %q, or by nobody", operandcleanupconfig.Namespace, leaseName, left)
	}()
	between()
}

// leaseName is the suite controller's leader-election Lease (suiteArgs keep the default id).
const leaseName = DefaultLeaderElectionID

// leaseHolder is the Lease's holder ("" when released or not created yet).
func leaseHolder() string {
	lease := &coordinationv1.Lease{}
	err := tenv.admin.Get(ctx, types.NamespacedName{Namespace: operandcleanupconfig.Namespace, Name: leaseName}, lease)
	if apierrors.IsNotFound(err) {
		return ""
	}
	Expect(err).NotTo(HaveOccurred())
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// newNamespace creates a uniquely named namespace (envtest has no namespace controller, so they are
// never deleted; unique names keep specs independent).
func newNamespace(prefix string) string {
	ns := &corev1.Namespace{}
	ns.Name = fmt.Sprintf("%s-%d", prefix, nsCounter.Add(1))
	Expect(tenv.admin.Create(ctx, ns)).To(Succeed())
	return ns.Name
}
