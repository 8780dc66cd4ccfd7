package applier_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// Issue 13 items 1 and 2: a manifest shipped again without the delete annotation ends the delete
// record of its object, pending or verified. Both specs fail on an applier that keeps the record.
var _ = Describe("payload applier: a marked object shipped again", func() {
	var (
		ctx      context.Context
		e        specEnv
		appNS    string
		base     *pt.Builder
		newOwned func() *applier.Applier
	)
	const file = "0000_10_app_00_obj.yaml"

	BeforeEach(func() {
		ctx = context.Background()
		e = newSpecEnv(ctx)
		appNS, base = e.appNS, e.base
		newOwned = func() *applier.Applier { return e.applier(applier.Options{}) }
	})

	It("ends a pending delete, so Upgradeable clears and a minor update proceeds, also after a restart", func() {
		w := payload.Resource{Group: widgetGroup, Version: "v1", Kind: "Widget", Namespace: appNS, Name: "w1"}
		v1 := base.Clone().File(file, widget(appNS, "w1", holdFinalizer))
		Expect(runPass(ctx, newOwned(), v1, applier.ModeInstall).Err).NotTo(HaveOccurred())
		a := newOwned()
		v2 := v1.Clone().Version("1.1.0").File(file, pt.Delete(widget(appNS, "w1")))
		res := runPass(ctx, a, v2, applier.ModeUpdate)
		Expect(res.Task(file).Outcome).To(Equal(applier.OutcomeDeleteRequested))
		Expect(res.DeletesInProgress).To(ConsistOf(w.String()))

		By("a z-stream re-ships the Widget unmarked while its finalizer still holds it")
		a = newOwned() // restarted between "Delete requested" and the re-ship
		v3 := v1.Clone().Version("1.1.1")
		res = runPass(ctx, a, v3, applier.ModeUpdate)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Task(file).Outcome).To(Equal(applier.OutcomeApplied))
		Expect(specsTexts(res, file)).To(ContainElement(applier.MsgDeleteRecordEnded(w, applier.DeleteRecord{})))
		Expect(res.DeletesInProgress).To(BeEmpty())
		Expect(res.Upgradeable).To(BeTrue())
		Eventually(getCO(ctx, e.coName)).Should(clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected))

		By("a restarted applier does not bring the record back, and a minor update is not blocked")
		a = newOwned()
		Expect(a.DeletesInProgress(ctx)).To(BeEmpty())
		Expect(a.State(ctx)).To(HaveField("Deletes", BeEmpty()))
		res = runPass(ctx, a, v3.Clone().Version("1.2.0"), applier.ModeUpdate)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.UpdateKind).To(Equal(payload.UpdateMinor))
		releaseFinalizers(ctx, appNS, "w1")
	})

	It("forgets a completed delete, so marking the object again in a later release deletes it again", func() {
		x := payload.Resource{Version: "v1", Kind: "ConfigMap", Namespace: appNS, Name: "x"}
		marked := func(version string) *pt.Builder {
			return base.Clone().Version(version).File(file, pt.Delete(pt.ConfigMap(appNS, "x", nil)))
		}
		a := newOwned()
		Expect(runPass(ctx, a, base.Clone().File(file, pt.ConfigMap(appNS, "x", nil)), applier.ModeInstall).Err).NotTo(HaveOccurred())
		Expect(runPass(ctx, a, marked("1.1.0"), applier.ModeUpdate).Task(file).Outcome).To(Equal(applier.OutcomeDeleteRequested))
		Eventually(notFound(ctx, "v1", "ConfigMap", appNS, "x")).Should(BeTrue())
		Expect(runPass(ctx, a, marked("1.1.0"), applier.ModeReconcile).Texts()).To(ContainElement(payload.MsgDeleteCompleted(x)))

		res := runPass(ctx, a, base.Clone().Version("1.1.1").File(file, pt.ConfigMap(appNS, "x", nil)), applier.ModeUpdate)
		Expect(res.Task(file).Outcome).To(Equal(applier.OutcomeApplied))
		now := time.Now()
		verified := applier.DeleteRecord{Verified: &now}
		Expect(specsTexts(res, file)).To(ContainElement(applier.MsgDeleteRecordEnded(x, verified)))

		res = runPass(ctx, newOwned(), marked("1.2.0"), applier.ModeUpdate)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Warnings()).To(BeEmpty(), "not mistaken for a reappearance")
		Expect(res.Task(file).Outcome).To(Equal(applier.OutcomeDeleteRequested))
		Expect(specsTexts(res, file)).To(ConsistOf(payload.MsgDeleteRequested(x)))
		Eventually(notFound(ctx, "v1", "ConfigMap", appNS, "x")).Should(BeTrue())
	})
})

// specsTexts are the message texts of one file's task.
func specsTexts(res applier.Result, file string) []string {
	var out []string
	for _, m := range res.Task(file).Messages {
		out = append(out, m.Text)
	}
	return out
}
