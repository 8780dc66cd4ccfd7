package cvo

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components/payloadapplier"
	"github.com/cleanup-e2e/cleanup-e2e/framework/deleteannotation"
	"github.com/cleanup-e2e/cleanup-e2e/framework/hold"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// Issue 13 items 1 and 2 on the applier as shipped (a Deployment, state in its ConfigMap): a
// z-stream that re-ships a marked object without the annotation ends its delete, pending or
// completed, so Upgradeable is not held False forever and marking it again deletes it again. The
// applier restarts between "Delete requested" and "Delete completed".
var _ = Describe("An object marked, shipped again, then marked again", Label("cvo", "delete-annotation", "reshipped", "restart"), func() {
	// The suite's longest spec (two applier restarts, two deletes held by a finalizer; ≈ 14 s on kind):
	// it starts first, so that it does not end the suite alone (e2e/cvo has the cluster to itself).
	It("does not block upgrades forever and is deleted again, across applier restarts", SpecPriority(1), func(ctx context.Context) {
		e := deleteannotation.NewEnv(ctx, clusterUnderTest(), "reship", applier.Options{})
		ns := e.ID
		const file = "0000_10_app_01_held.yaml"
		held := func() obj { return appConfigMap(ns, "held") }
		shipped := func(version string) *pt.Builder {
			return appPayload(ns, version).File(file, pt.WithFinalizers(held(), hold.Finalizer))
		}
		marked := func(version string) *pt.Builder { return appPayload(ns, version).File(file, pt.Delete(held())) }
		pending := payload.UpgradeableMessage([]string{deleteannotation.ResourceOf(held()).String()})
		pa := installApplier(ctx, e, shipped("1.0.0"))
		e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", "1.0.0"))

		By("1.1.0 marks the held ConfigMap: Delete requested, Upgradeable=False")
		setPayload(ctx, e, pa, marked("1.1.0"))
		expectPendingAt(ctx, e, "1.1.0", pending)
		restart(ctx, pa)

		By("1.1.1 ships it again unmarked: the restarted applier ends the pending delete")
		setPayload(ctx, e, pa, shipped("1.1.1"))
		e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", "1.1.1"),
			clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected))
		Expect(findDeleteRecord(ctx, e, pa, held())).Error().To(BeFalse(), "no delete record left")
		Expect(hold.Release(ctx, k8s, held())).To(Succeed()) // the old delete finishes; the next pass recreates it
		Eventually(func() (obj, error) { return kube.Get(ctx, k8s, held()) }).WithContext(ctx).WithTimeout(e.Timeout).
			Should(And(Not(matchers.BeBeingDeleted()), matchers.HaveFinalizer(hold.Finalizer)), "recreated by 1.1.1")

		By("1.2.0, a minor update, is not refused, and marks it again: deleted again")
		setPayload(ctx, e, pa, marked("1.2.0"))
		expectPendingAt(ctx, e, "1.2.0", pending)
		requested := deleteRecord(ctx, e, pa, held()).Requested
		restart(ctx, pa)
		Expect(hold.Release(ctx, k8s, held())).To(Succeed())
		e.ExpectGone(ctx, held())
		e.ExpectClusterOperator(ctx, clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected))
		completed := deleteRecord(ctx, e, pa, held())
		Expect(completed.Verified).NotTo(BeNil(), "the restarted applier saw the delete complete")
		Expect(completed.Requested).To(HaveValue(BeTemporally("==", *requested)))

		By("1.2.1 ships it again, 1.3.0 marks it again: the completed delete did not outlive the re-ship")
		setPayload(ctx, e, pa, shipped("1.2.1"))
		e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", "1.2.1"))
		e.ExpectPresent(ctx, held())
		setPayload(ctx, e, pa, marked("1.3.0"))
		expectPendingAt(ctx, e, "1.3.0", pending)
		Expect(deleteRecord(ctx, e, pa, held()).Requested).To(HaveValue(BeTemporally(">", *completed.Verified)), "requested anew")
		Expect(hold.Release(ctx, k8s, held())).To(Succeed())
		e.ExpectGone(ctx, held())
		e.ExpectClusterOperator(ctx, clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected))
	})
})

// expectPendingAt waits until the Deployment applied version and reports the pending delete.
func expectPendingAt(ctx context.Context, e *deleteannotation.Env, version, pending string) {
	GinkgoHelper()
	e.ExpectClusterOperator(ctx, clusteroperator.HaveOperandVersion("operator", version),
		clusteroperator.HaveCondition("Upgradeable", "False", payload.ReasonResourceDeletionInProgress),
		clusteroperator.HaveConditionMessage("Upgradeable", pending))
}

// restart scales the applier to 0 and back to 1: a new process, state from its ConfigMap.
func restart(ctx context.Context, pa *payloadapplier.Installed) {
	GinkgoHelper()
	By("restarting the applier")
	Expect(pa.Scale(ctx, 0)).To(Succeed())
	Expect(pa.Scale(ctx, 1)).To(Succeed())
}
