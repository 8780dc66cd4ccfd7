package operandcleanup

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
)

var _ = Describe("opt-in finalizer", func() {
	It("follows spec.cleanup.enabled and never writes status before deletion", func() {
		ns := newNamespace("optin")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		key := keyOf(csv)
		Eventually(csvFinalizers(key)).Should(ContainElement(Finalizer))

		cur := getCSV(key)
		Expect(cur.Status.Phase).To(Equal(v1alpha1.CSVPhaseSucceeded))
		Expect(cur.Status.Conditions).To(HaveLen(1))
		Expect(cur.Status.Cleanup.PendingDeletion).To(BeEmpty())

		updateCSV(key, func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = false })
		Eventually(csvFinalizers(key)).ShouldNot(ContainElement(Finalizer))

		By("a disabled CSV is deleted at once and its operands stay")
		widgets := createOperands(widgetKind, ns, "w", 2)
		deleteCSV(csv)
		Eventually(csvGone(key)).Should(BeTrue())
		expectAll(widgets, "present")
	})

	It("never puts the finalizer on a CSV that did not opt in", func() {
		ns := newNamespace("unset")
		csv := createCSV(ns, "op.v1", targetNamespaces(ns), owns(widgetKind))
		Consistently(csvFinalizers(keyOf(csv))).ShouldNot(ContainElement(Finalizer))
	})

	It("removes a finalizer left over from an earlier opt-in", func() {
		ns := newNamespace("leftover")
		csv := createCSV(ns, "op.v1", targetNamespaces(ns), owns(widgetKind), func(c *v1alpha1.ClusterServiceVersion) {
			c.Finalizers = []string{Finalizer}
		})
		Eventually(csvFinalizers(keyOf(csv))).ShouldNot(ContainElement(Finalizer))
	})

	It("ignores copied CSVs, even when they carry spec.cleanup.enabled", func() {
		opNS, copyNS := newNamespace("copy-src"), newNamespace("copy-dst")
		copied := createCSVWithStatus(copyNS, "op.v1", v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonCopied,
			cleanupEnabled(true), targetNamespaces(""), owns(widgetKind), label(v1alpha1.CopiedLabelKey, opNS))
		Consistently(csvFinalizers(keyOf(copied))).ShouldNot(ContainElement(Finalizer))

		widgets := createOperands(widgetKind, copyNS, "w", 2)
		deleteCSV(copied)
		Eventually(csvGone(keyOf(copied))).Should(BeTrue())
		expectAll(widgets, "present")
	})

	It("drops the finalizer from a CSV whose status says Copied", func() {
		ns := newNamespace("copied-reason")
		csv := createCSVWithStatus(ns, "op.v1", v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonCopied,
			cleanupEnabled(true), targetNamespaces(""), owns(widgetKind))
		Eventually(csvFinalizers(keyOf(csv))).ShouldNot(ContainElement(Finalizer))
		Consistently(csvFinalizers(keyOf(csv))).ShouldNot(ContainElement(Finalizer))
	})
})
