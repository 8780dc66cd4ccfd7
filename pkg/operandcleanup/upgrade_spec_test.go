package operandcleanup

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
)

func cleanupEnabledOf(key types.NamespacedName) func() bool {
	return func() bool {
		c := getCSV(key)
		return c != nil && c.Spec.Cleanup.Enabled
	}
}

var _ = Describe("upgrades", func() {
	It("hands the opt-in over along a v1 -> v2 -> v3 chain and never cleans up the replaced CSVs", func() {
		ns := newNamespace("upgrade")
		opts := []csvOpt{targetNamespaces(ns), owns(widgetKind)}
		v1 := createCSV(ns, "op.v1", append(opts, cleanupEnabled(true))...)
		Eventually(csvFinalizers(keyOf(v1))).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 3)

		By("v2 appears: v2 inherits the opt-in, v1 loses the finalizer before OLM deletes it and keeps its opt-in")
		v2 := createCSVWithStatus(ns, "op.v2", v1alpha1.CSVPhasePending, v1alpha1.CSVReasonRequirementsUnknown, append(opts, replaces("op.v1"))...)
		Eventually(cleanupEnabledOf(keyOf(v2))).Should(BeTrue())
		Eventually(csvFinalizers(keyOf(v2))).Should(ContainElement(Finalizer))
		Eventually(csvFinalizers(keyOf(v1))).ShouldNot(ContainElement(Finalizer))
		Expect(cleanupEnabledOf(keyOf(v1))()).To(BeTrue(), "the user's opt-in is never cleared")

		By("OLM marks v1 Replacing, then Deleting, then deletes it")
		setPhase(v1, v1alpha1.CSVPhaseReplacing, v1alpha1.CSVReasonBeingReplaced)
		setPhase(v2, v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonInstallSuccessful)
		setPhase(v1, v1alpha1.CSVPhaseDeleting, v1alpha1.CSVReasonReplaced)
		deleteCSV(v1)
		Eventually(csvGone(keyOf(v1))).Should(BeTrue())
		expectAll(widgets, "present")

		By("v3 replaces v2")
		v3 := createCSVWithStatus(ns, "op.v3", v1alpha1.CSVPhasePending, v1alpha1.CSVReasonRequirementsUnknown, append(opts, replaces("op.v2"))...)
		Eventually(cleanupEnabledOf(keyOf(v3))).Should(BeTrue())
		Eventually(csvFinalizers(keyOf(v3))).Should(ContainElement(Finalizer))
		Eventually(csvFinalizers(keyOf(v2))).ShouldNot(ContainElement(Finalizer))
		deleteCSV(v2)
		Eventually(csvGone(keyOf(v2))).Should(BeTrue())
		expectAll(widgets, "present")
		Eventually(csvEvents(v2)).Should(ContainElement(And(HavePrefix(EventReasonUpgrade), ContainSubstring("op.v3"))))

		By("uninstalling the head of the chain does clean up")
		deleteCSV(v3)
		Eventually(csvGone(keyOf(v3))).Should(BeTrue())
		expectAll(widgets, "absent")
	})

	It("does not clean up a CSV that was already being deleted with a successor when the controller saw it", func() {
		ns := newNamespace("upgrade-late")
		v1 := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		Eventually(csvFinalizers(keyOf(v1))).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 2, testFinalizer)

		var v2 *v1alpha1.ClusterServiceVersion
		restartController(func() {
			v2 = createCSV(ns, "op.v2", targetNamespaces(ns), owns(widgetKind), replaces("op.v1"))
			deleteCSV(v1) // phase still Succeeded: OLM's Replacing was never observed
		})
		Eventually(csvGone(keyOf(v1))).Should(BeTrue())
		expectAll(widgets, "present")
		Eventually(cleanupEnabledOf(keyOf(v2))).Should(BeTrue())
		Eventually(csvFinalizers(keyOf(v2))).Should(ContainElement(Finalizer))
		releaseOperands(widgets...)
	})

	It("never cleans up a CSV OLM deletes as replaced, even when its successor vanished meanwhile", func() {
		ns := newNamespace("upgrade-phase")
		v1 := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		Eventually(csvFinalizers(keyOf(v1))).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 2)

		setPhase(v1, v1alpha1.CSVPhaseDeleting, v1alpha1.CSVReasonReplaced)
		Eventually(csvFinalizers(keyOf(v1))).ShouldNot(ContainElement(Finalizer))
		Expect(cleanupEnabledOf(keyOf(v1))()).To(BeTrue(), "kept until a successor can inherit it")
		deleteCSV(v1)
		Eventually(csvGone(keyOf(v1))).Should(BeTrue())
		expectAll(widgets, "present")
	})
})
