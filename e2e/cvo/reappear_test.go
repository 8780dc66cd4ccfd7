package cvo

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/framework/deleteannotation"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// "CVO will produce a warning if a resource previously removed reappears." The applier knows the
// object it deleted by UID: one created under the name afterwards — before a pass saw the first one
// gone, or after — completes that delete and is the reappearance warning; a reconcile leaves it, the
// next update deletes it (the CVO goes by the name only: until its restart, a re-created object kept
// its delete "already requested" and Upgradeable False; pkg/payload/README.md).
var _ = Describe("An object recreated after its delete", Label("cvo", "delete-annotation", "reappeared"), func() {
	It("completes the delete requested and is a warning, deleted again by the next update only", func(ctx context.Context) {
		e := deleteannotation.NewEnv(ctx, clusterUnderTest(), "reappear", applier.Options{})
		ns := e.ID
		const file = "0000_10_app_01_comeback.yaml"
		comeback := func() obj { return pt.ConfigMap(ns, "comeback", map[string]string{"v": "1"}) }
		r := deleteannotation.ResourceOf(comeback())
		v1 := pt.New("1.0.0").File("0000_10_app_00_namespace.yaml", pt.Namespace(ns)).File(file, comeback())
		e.MustRun(ctx, v1, applier.ModeInstall)

		v2 := v1.Clone().Version("1.1.0").File(file, pt.Delete(comeback()))
		Expect(e.MustRun(ctx, v2, applier.ModeUpdate).Task(file).Outcome).To(Equal(applier.OutcomeDeleteRequested))
		e.ExpectGone(ctx, comeback())

		By("recreated before any pass saw it gone: the delete requested is complete, the new object a warning")
		Expect(k8s.Create(ctx, comeback())).To(Succeed())
		res := e.MustRun(ctx, v2, applier.ModeReconcile)
		Expect(res.Task(file).Outcome).To(Equal(applier.OutcomeReappeared))
		Expect(deleteannotation.TaskTexts(*res.Task(file))).To(ContainElement(payload.MsgDeleteCompleted(r)))
		Expect(res.DeletesInProgress).To(BeEmpty())
		Expect(res.Upgradeable).To(BeTrue())
		state, err := e.Applier.State(ctx)
		Expect(err).NotTo(HaveOccurred())
		var verifiedAt *time.Time
		for _, d := range state.Deletes {
			if d.Resource.Key() == r.Key() {
				verifiedAt = d.Verified
			}
		}
		Expect(verifiedAt).NotTo(BeNil(), "the state records the verified delete of %s", r)
		Expect(res.Warnings()).To(ConsistOf(payload.MsgReappeared(r, *verifiedAt)))
		e.ExpectPresent(ctx, comeback()) // a reconcile does not delete

		By("recreated again after the delete was verified: the reappearance warning, on every pass")
		Expect(k8s.Delete(ctx, comeback())).To(Succeed())
		e.ExpectGone(ctx, comeback())
		recreateAndExpectWarning(ctx, e, v2, file, payload.MsgReappeared(r, *verifiedAt))

		By("the next update deletes it")
		v3 := v2.Clone().Version("1.2.0")
		Expect(e.MustRun(ctx, v3, applier.ModeUpdate).Task(file).Outcome).To(Equal(applier.OutcomeDeleteRequested))
		e.ExpectGone(ctx, comeback())
	})
})

// recreateAndExpectWarning recreates the object after its delete was verified: the pass completes
// with the reappearance warning, the object stays, Upgradeable stays True and Degraded False.
func recreateAndExpectWarning(ctx context.Context, e *deleteannotation.Env, b *pt.Builder, file, warning string) {
	GinkgoHelper()
	cm := pt.ConfigMap(e.ID, "comeback", map[string]string{"v": "again"})
	Expect(k8s.Create(ctx, cm)).To(Succeed())
	for range 2 {
		res := e.MustRun(ctx, b, applier.ModeReconcile)
		Expect(res.Warnings()).To(ConsistOf(warning))
		Expect(res.Task(file).Outcome).To(Equal(applier.OutcomeReappeared))
		Expect(res.Upgradeable).To(BeTrue())
	}
	e.ExpectPresent(ctx, cm)
	e.ExpectClusterOperator(ctx, clusteroperator.HaveCondition("Degraded", "False", payload.ReasonAsExpected),
		clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected))
}
