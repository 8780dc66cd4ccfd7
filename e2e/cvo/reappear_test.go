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

// "CVO will produce a warning if a resource previously removed reappears." Before the delete is
// verified, a recreated object is just a delete still in progress; after, it is the warning (and the
// applier does not delete it again).
var _ = Describe("An object recreated after its delete", Label("cvo", "delete-annotation", "reappeared"), func() {
	It("is still in progress before the delete was verified, and a warning after", func(ctx context.Context) {
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

		By("recreated before any pass saw it gone: the delete is still in progress, no warning")
		Expect(k8s.Create(ctx, comeback())).To(Succeed())
		res := e.MustRun(ctx, v2, applier.ModeReconcile)
		Expect(deleteannotation.TaskTexts(*res.Task(file))).To(ConsistOf(payload.MsgDeleteAlreadyRequested(r)))
		Expect(res.Warnings()).To(BeEmpty())
		Expect(res.DeletesInProgress).To(ConsistOf(r.String()))
		e.ExpectPresent(ctx, comeback()) // requested once, never again

		By("gone again: the next pass verifies the delete")
		Expect(k8s.Delete(ctx, comeback())).To(Succeed())
		res = e.MustRun(ctx, v2, applier.ModeReconcile)
		Expect(res.Texts()).To(ContainElement(payload.MsgDeleteCompleted(r)))
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

		By("recreated after the delete was verified: the reappearance warning, on every pass")
		recreateAndExpectWarning(ctx, e, v2, file, payload.MsgReappeared(r, *verifiedAt))
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
