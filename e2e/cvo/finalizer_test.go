package cvo

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/clusteroperator"
	"github.com/cleanup-e2e/cleanup-e2e/framework/deleteannotation"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// The enhancement's Option 1: the applier issues one Delete and never waits; an operator's finalizer
// keeps the object, so every pass reports progress and Upgradeable stays False (minor updates
// refused, z-stream allowed) until the finalizer lets go.
var _ = Describe("A delete held by an operator's finalizer", Label("cvo", "delete-annotation", "finalizer"), func() {
	It("keeps Upgradeable=False naming the object, reports progress on every pass, and completes once released", func(ctx context.Context) {
		// Before the namespaces, released after every cleanup: on a shared cluster an AllNamespaces cleanup
		// of widget-operator by another run (e2e/cleanup, the operator-repo example) would delete the Widget.
		release, err := specs.HoldAPIsOf(ctx, cl.APIs, CurrentSpecReport().FullText(), bundles.Dir(widget.Name, "v0.1.0"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(release)
		e := deleteannotation.NewEnv(ctx, clusterUnderTest(), "held", applier.Options{})
		ns := e.ID
		held := heldWidget(ns)
		r := deleteannotation.ResourceOf(held)
		v1 := widgetOperatorPayload(e.ID, "1.0.0").File(widgetFile, held)
		e.MustRun(ctx, v1, applier.ModeInstall)
		Expect(kube.WaitDeploymentAvailable(ctx, k8s, types.NamespacedName{Namespace: ns, Name: widget.Name}, e.Timeout)).To(Succeed())
		Eventually(func() (client.Object, error) { return kube.Get(ctx, k8s, held) }).WithContext(ctx).
			WithTimeout(e.Timeout).Should(matchers.HaveFinalizer(widget.Finalizer), "widget-operator took charge of the Widget")

		By("updating to a release marking the Widget: one Delete, the finalizer holds it")
		v2 := v1.Clone().Version("1.1.0").File(widgetFile, pt.Delete(heldWidget(ns)))
		res := e.MustRun(ctx, v2, applier.ModeUpdate)
		Expect(res.Task(widgetFile).Outcome).To(Equal(applier.OutcomeDeleteRequested))
		Expect(deleteannotation.TaskTexts(*res.Task(widgetFile))).To(ConsistOf(payload.MsgDeleteRequested(r)))
		live, err := kube.Get(ctx, k8s, held)
		Expect(err).NotTo(HaveOccurred())
		Expect(live).To(matchers.BeBeingDeleted())
		expectedBy := payload.MsgDeleteExpectedBy(r, live.GetDeletionTimestamp().Time)
		pending := payload.UpgradeableMessage([]string{r.String()})

		By("every later pass reports the pending delete and keeps Upgradeable=False naming the Widget")
		Consistently(func(g Gomega) {
			res := e.Run(ctx, v2, applier.ModeReconcile)
			g.Expect(res.Err).NotTo(HaveOccurred())
			g.Expect(res.Task(widgetFile).Outcome).To(Equal(applier.OutcomeDeleteInProgress))
			g.Expect(deleteannotation.TaskTexts(*res.Task(widgetFile))).To(ConsistOf(expectedBy))
			g.Expect(res.DeletesInProgress).To(ConsistOf(r.String()))
			g.Expect(e.GetClusterOperator(ctx)()).To(And(
				clusteroperator.HaveCondition("Upgradeable", "False", payload.ReasonResourceDeletionInProgress),
				clusteroperator.HaveConditionMessage("Upgradeable", pending)))
		}).WithContext(ctx).WithTimeout(4 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("a minor update is refused while the delete is pending; a z-stream update would not be")
		ok, msg, err := e.Applier.CanUpgradeTo(ctx, "1.2.0")
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse())
		Expect(msg).To(Equal(pending))
		Expect(e.Applier.CanUpgradeTo(ctx, "1.1.1")).To(BeTrue())
		res = e.Run(ctx, v2.Clone().Version("1.2.0"), applier.ModeUpdate)
		Expect(applier.IsUpgradeBlocked(res.Err)).To(BeTrue(), "%v", res.Err)
		Expect(res.Err).To(MatchError(ContainSubstring(pending)))
		e.ExpectClusterOperator(ctx, clusteroperator.HaveCondition("Progressing", "False", applier.ReasonUpgradeBlocked),
			clusteroperator.HaveOperandVersion("operator", "1.1.0"))

		By("clearing spec.hold: widget-operator's finalizer finishes, the delete completes")
		Expect(k8s.Patch(ctx, live, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hold":false}}`)))).To(Succeed())
		passes := e.RunUntil(ctx, v2, applier.ModeReconcile, HaveField("Upgradeable", BeTrue()))
		Expect(deleteannotation.Count(deleteannotation.Texts(passes...), payload.MsgDeleteCompleted(r))).To(Equal(1))
		e.ExpectGone(ctx, held)
		e.ExpectClusterOperator(ctx, clusteroperator.HaveCondition("Upgradeable", "True", payload.ReasonAsExpected),
			clusteroperator.HaveCondition("Progressing", "False", payload.ReasonAsExpected))
	})
})

const widgetFile = "0000_30_widgets_00_widget.yaml"

// widgetOperatorPayload ships widget-operator (the fixture image) in namespace id, watching only it
// and keeping its records there. The Widget CRDs are the suite's, shared by every spec.
func widgetOperatorPayload(id, version string) *pt.Builder {
	ns, sa, rbac := id, widget.Name, id+"-"+widget.Name
	return pt.New(version).
		File("0000_20_widget-operator_00_namespace.yaml", pt.Namespace(ns)).
		File("0000_20_widget-operator_01_rbac.yaml", serviceAccount(ns, sa),
			clusterRole(rbac, rules([2]string{fixturesv1alpha1.GroupVersion.Group, "*"}, [2]string{"", "configmaps"},
				[2]string{"", "namespaces"}, [2]string{"", "events"}, [2]string{"events.k8s.io", "events"})),
			clusterRoleBinding(rbac, rbac, ns, sa)).
		File("0000_20_widget-operator_02_deployment.yaml", deployment(ns, widget.Name, sa, fixtures.Image(widget.Name, "v0.1.0"),
			[]string{"/fixture-operator", "widget"}, []string{"--records-namespace=" + ns},
			"WATCH_NAMESPACE", ns, "OPERATOR_VERSION", "0.1.0"))
}

// heldWidget is a Widget whose finalizer waits while spec.hold is true.
func heldWidget(ns string) obj {
	w := pt.Object(fixturesv1alpha1.GroupVersion.String(), "Widget", ns, "held")
	w.Object["spec"] = map[string]interface{}{"hold": true, "data": map[string]interface{}{"k": "v"}}
	return w
}
