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

		By("v2 appears: v2 inherits the opt-in; v1 keeps its opt-in and, until OLM marks it replaced, its finalizer")
		v2 := createCSVWithStatus(ns, "op.v2", v1alpha1.CSVPhasePending, v1alpha1.CSVReasonRequirementsUnknown, append(opts, replaces("op.v1"))...)
		Eventually(cleanupEnabledOf(keyOf(v2))).Should(BeTrue())
		Eventually(csvFinalizers(keyOf(v2))).Should(ContainElement(Finalizer))
		Eventually(csvEvents(v1)).Should(ContainElement(And(HavePrefix(EventReasonUpgrade), ContainSubstring("op.v2"))))
		Expect(csvFinalizers(keyOf(v1))()).To(ContainElement(Finalizer), "kept for an uninstall that deletes v2 first")
		Expect(cleanupEnabledOf(keyOf(v1))()).To(BeTrue(), "the user's opt-in is never cleared")

		By("OLM marks v1 Replacing, then Deleting: v1 loses the finalizer; then OLM deletes it")
		setPhase(v1, v1alpha1.CSVPhaseReplacing, v1alpha1.CSVReasonBeingReplaced)
		setPhase(v2, v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonInstallSuccessful)
		setPhase(v1, v1alpha1.CSVPhaseDeleting, v1alpha1.CSVReasonReplaced)
		Eventually(csvFinalizers(keyOf(v1))).ShouldNot(ContainElement(Finalizer))
		deleteCSV(v1)
		Eventually(csvGone(keyOf(v1))).Should(BeTrue())
		expectAll(widgets, "present")

		By("v3 replaces v2")
		v3 := createCSVWithStatus(ns, "op.v3", v1alpha1.CSVPhasePending, v1alpha1.CSVReasonRequirementsUnknown, append(opts, replaces("op.v2"))...)
		Eventually(cleanupEnabledOf(keyOf(v3))).Should(BeTrue())
		Eventually(csvFinalizers(keyOf(v3))).Should(ContainElement(Finalizer))
		deleteCSV(v2) // while v3 stays: an upgrade's deletion, whatever OLM's phase says
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

	// The uninstall of an upgrade in flight, new CSV first (kubectl delete csv op.v2 op.v1; or --all, whose
	// order is the names'): v2's cleanup is skipped while v1 is installed, and v1's deletion, with no
	// successor that stays, is the uninstall. v2 lingers, held by OLM's own finalizer as in a real
	// cluster, while v1 is deleted; v1 had lost the finalizer when v2 appeared, and the operands stayed.
	It("cleans up when an uninstall deletes the successor of an upgrade in flight first, then the replaced CSV", func() {
		ns := newNamespace("upgrade-uninstall")
		opts := []csvOpt{targetNamespaces(ns), owns(widgetKind)}
		v1 := createCSV(ns, "op.v1", append(opts, cleanupEnabled(true))...)
		Eventually(csvFinalizers(keyOf(v1))).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 2)
		v2 := createCSVWithStatus(ns, "op.v2", v1alpha1.CSVPhasePending, v1alpha1.CSVReasonRequirementsUnknown, append(opts, replaces("op.v1"))...)
		Eventually(csvFinalizers(keyOf(v2))).Should(ContainElement(Finalizer))
		setPhase(v1, v1alpha1.CSVPhaseReplacing, v1alpha1.CSVReasonBeingReplaced)
		updateCSV(keyOf(v2), func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = append(c.Finalizers, testFinalizer) })

		deleteCSV(v2)
		Eventually(csvFinalizers(keyOf(v2))).ShouldNot(ContainElement(Finalizer), "v2's cleanup is skipped: v1 is still installed")
		expectAll(widgets, "present")
		deleteCSV(v1)
		Eventually(csvGone(keyOf(v1))).Should(BeTrue())
		expectAll(widgets, "absent")
		updateCSV(keyOf(v2), func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = nil })
		Eventually(csvGone(keyOf(v2))).Should(BeTrue())
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
