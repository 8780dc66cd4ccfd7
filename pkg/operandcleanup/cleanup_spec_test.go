package operandcleanup

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
)

var _ = Describe("cleanup on uninstall", func() {
	It("deletes owned CRs in the single target namespace only", func() {
		opNS, otherNS := newNamespace("single"), newNamespace("single-other")
		csv := createCSV(opNS, "op.v1", cleanupEnabled(true), targetNamespaces(opNS),
			owns(widgetKind, clusterKind), requires(gadgetKind))
		key := keyOf(csv)
		Eventually(csvFinalizers(key)).Should(ContainElement(Finalizer))

		target := createOperands(widgetKind, opNS, "w", 3)
		outside := createOperands(widgetKind, otherNS, "w", 2)
		required := createOperands(gadgetKind, opNS, "g", 2)
		clusterScoped := createOperands(clusterKind, "", "single-ct", 1)

		deleteCSV(csv)
		Eventually(csvGone(key)).Should(BeTrue())
		expectAll(target, "absent")
		expectAll(outside, "present")
		expectAll(required, "present")
		expectAll(clusterScoped, "present")
		for _, k := range []testKind{widgetKind, gadgetKind, clusterKind} {
			Expect(tenv.admin.Get(ctx, types.NamespacedName{Name: k.crdName()}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed(), "CRD %s must stay", k.crdName())
		}
		Eventually(csvEvents(csv)).Should(ContainElement(And(
			HavePrefix(EventReasonCompleted), ContainSubstring("cluster-scoped owned CRDs skipped (operator is not global): "+clusterKind.crdName()))))
	})

	It("falls back to the OperatorGroup's namespaces (MultiNamespace) when the annotation is missing", func() {
		opNS, a, b, c := newNamespace("multi"), newNamespace("multi-a"), newNamespace("multi-b"), newNamespace("multi-c")
		createOperatorGroup(opNS, a, b)
		csv := createCSV(opNS, "op.v1", cleanupEnabled(true), owns(widgetKind))
		Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
		inA, inB := createOperands(widgetKind, a, "w", 2), createOperands(widgetKind, b, "w", 2)
		inC, inOp := createOperands(widgetKind, c, "w", 2), createOperands(widgetKind, opNS, "w", 1)

		deleteCSV(csv)
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
		expectAll(append(inA, inB...), "absent")
		expectAll(append(inC, inOp...), "present")
	})

	It("deletes namespaced and cluster-scoped CRs everywhere for a global operator", func() {
		opNS, x, y := newNamespace("global"), newNamespace("global-x"), newNamespace("global-y")
		csv := createCSV(opNS, "op.v1", cleanupEnabled(true), targetNamespaces(""), owns(sprocketKind, clusterKind))
		Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
		objs := append(createOperands(sprocketKind, x, "s", 2), createOperands(sprocketKind, y, "s", 2)...)
		objs = append(objs, createOperands(clusterKind, "", "global-ct", 2)...)
		gadgets := createOperands(gadgetKind, x, "g", 1)

		deleteCSV(csv)
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
		expectAll(objs, "absent")
		expectAll(gadgets, "present")
	})

	It("leaves a second installation of the same operator alone", func() {
		nsA, nsB := newNamespace("twin-a"), newNamespace("twin-b")
		csvA := createCSV(nsA, "op.v1", cleanupEnabled(true), targetNamespaces(nsA), owns(widgetKind))
		csvB := createCSV(nsB, "op.v1", cleanupEnabled(true), targetNamespaces(nsB), owns(widgetKind))
		Eventually(csvFinalizers(keyOf(csvA))).Should(ContainElement(Finalizer))
		Eventually(csvFinalizers(keyOf(csvB))).Should(ContainElement(Finalizer))
		inA, inB := createOperands(widgetKind, nsA, "w", 2), createOperands(widgetKind, nsB, "w", 2)

		deleteCSV(csvA)
		Eventually(csvGone(keyOf(csvA))).Should(BeTrue())
		expectAll(inA, "absent")
		expectAll(inB, "present")
		b := getCSV(keyOf(csvB))
		Expect(b.DeletionTimestamp).To(BeNil())
		Expect(b.Finalizers).To(ContainElement(Finalizer))
		Expect(b.Status.Phase).To(Equal(v1alpha1.CSVPhaseSucceeded))
	})

	// Invariant 3 with overlapping targets: a global installation and one in a namespace it also serves
	// (OLM rejects the second as intersecting, but its CSV stays). Whichever is uninstalled leaves the
	// operands the other serves, and completes: its last check once counted those and waited for ever.
	DescribeTable("an uninstall whose targets overlap another installation's leaves the shared operands and completes",
		func(uninstallGlobal bool) {
			globalNS, teamNS, otherNS := newNamespace("overlap-global"), newNamespace("overlap-team"), newNamespace("overlap-other")
			global := createCSV(globalNS, "op.v1", cleanupEnabled(true), targetNamespaces(""), owns(widgetKind))
			team := createCSV(teamNS, "op.v1", cleanupEnabled(true), targetNamespaces(teamNS), owns(widgetKind))
			Eventually(csvFinalizers(keyOf(global))).Should(ContainElement(Finalizer))
			Eventually(csvFinalizers(keyOf(team))).Should(ContainElement(Finalizer))
			shared, others := createOperands(widgetKind, teamNS, "w", 2), createOperands(widgetKind, otherNS, "w", 2)

			gone, kept := global, team
			if !uninstallGlobal {
				gone, kept = team, global
			}
			DeferCleanup(func() { // without its opt-in: a global one would otherwise hold every later spec's operands
				updateCSV(keyOf(kept), func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = false })
				Eventually(csvFinalizers(keyOf(kept))).ShouldNot(ContainElement(Finalizer))
				deleteCSV(kept)
				Eventually(csvGone(keyOf(kept))).Should(BeTrue())
			})
			deleteCSV(gone)
			Eventually(csvGone(keyOf(gone))).Should(BeTrue(), "the uninstall of %s must complete with the shared operands left", keyOf(gone))
			expectAll(shared, "present")
			if uninstallGlobal {
				expectAll(others, "absent")
			} else {
				expectAll(others, "present")
			}
			Expect(getCSV(keyOf(kept)).DeletionTimestamp).To(BeNil())
		},
		Entry("the global one", true),
		Entry("the one in the namespace the global one also serves", false),
	)

	It("reports bounded pending CRs in status, metrics and conditions until the operator lets go", func() {
		ns := newNamespace("pending")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		key := keyOf(csv)
		Eventually(csvFinalizers(key)).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 8, testFinalizer)
		completedBefore := metricValue("operand_cleanup_duration_seconds", map[string]string{"result": "completed"})

		deleteCSV(csv)
		Eventually(func() string { return getCSV(key).Status.Message }).Should(Equal(
			"waiting for operator to finish cleanup for 8 CRs; status.cleanup.pendingDeletion lists the first 5"))
		cur := getCSV(key)
		Expect(cur.Status.Phase).To(Equal(PhaseCleanup))
		Expect(cur.Status.Reason).To(Equal(v1alpha1.CSVReasonWaitingForCleanupToComplete))
		Expect(cur.Status.Cleanup.PendingDeletion).To(HaveLen(1))
		Expect(cur.Status.Cleanup.PendingDeletion[0].Group).To(Equal(testGroup))
		Expect(cur.Status.Cleanup.PendingDeletion[0].Kind).To(Equal("Widget"))
		Expect(pendingNames(cur)).To(Equal([]string{
			testGroup + "/Widget/" + ns + "/w-0", testGroup + "/Widget/" + ns + "/w-1", testGroup + "/Widget/" + ns + "/w-2",
			testGroup + "/Widget/" + ns + "/w-3", testGroup + "/Widget/" + ns + "/w-4"}))
		By("keeping what OLM wrote and appending one condition")
		Expect(cur.Status.RequirementStatus).To(HaveLen(1))
		Expect(cur.Status.Conditions).To(HaveLen(2))
		Expect(cur.Status.Conditions[0].Phase).To(Equal(v1alpha1.CSVPhaseSucceeded))
		last := cur.Status.Conditions[1]
		Expect(last.Phase).To(Equal(PhaseCleanup))
		Expect(last.Reason).To(Equal(v1alpha1.CSVReasonWaitingForCleanupToComplete))
		Expect(last.Message).To(Equal(cur.Status.Message))
		expectAll(widgets, "deleting")
		Expect(metricValue("operand_cleanup_pending_resources", map[string]string{"namespace": ns, "csv": "op.v1"})).To(Equal(8.0))

		releaseOperands(widgets[:5]...)
		Eventually(func() string { return getCSV(key).Status.Message }).Should(Equal("waiting for operator to finish cleanup for 3 CRs"))
		cur = getCSV(key)
		Expect(pendingNames(cur)).To(HaveLen(3))
		Expect(cur.Status.Conditions).To(HaveLen(2), "a message change updates the latest condition")
		Expect(cur.Status.Conditions[1].Message).To(Equal(cur.Status.Message))
		Eventually(func() float64 {
			return metricValue("operand_cleanup_pending_resources", map[string]string{"namespace": ns, "csv": "op.v1"})
		}).Should(Equal(3.0))

		releaseOperands(widgets[5:]...)
		Eventually(csvGone(key)).Should(BeTrue())
		expectAll(widgets, "absent")
		Expect(metricValue("operand_cleanup_duration_seconds", map[string]string{"result": "completed"})).To(BeNumerically(">", completedBefore))
	})

	It("aborts when spec.cleanup.enabled is set to false while pending", func() {
		ns := newNamespace("abort")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		key := keyOf(csv)
		Eventually(csvFinalizers(key)).Should(ContainElement(Finalizer))
		stuck := createOperands(widgetKind, ns, "stuck", 2, testFinalizer)
		deleteCSV(csv)
		Eventually(func() v1alpha1.ClusterServiceVersionPhase { return getCSV(key).Status.Phase }).Should(Equal(PhaseCleanup))

		updateCSV(key, func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = false })
		Eventually(csvGone(key)).Should(BeTrue())
		expectAll(stuck, "deleting")
		Eventually(csvEvents(csv)).Should(ContainElement(HavePrefix(EventReasonAborted)))
		releaseOperands(stuck...)
	})

	It("warns with CleanupStalled, naming the blocking CRs, after the per-CSV stall timeout", func() {
		ns := newNamespace("stall")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind),
			annotation(StallTimeoutAnnotation, "1s"))
		Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
		stuck := createOperands(widgetKind, ns, "blocker", 1, testFinalizer)
		deleteCSV(csv)
		Eventually(csvEvents(csv)).Should(ContainElement(And(HavePrefix(EventReasonStalled),
			ContainSubstring("1 CRs still pending"), ContainSubstring("Widget."+testGroup+" "+ns+"/blocker-0"),
			ContainSubstring("finalizers: "+testFinalizer))))
		Expect(metricValue("operand_cleanup_stalled_total", map[string]string{"namespace": ns, "csv": "op.v1"})).To(BeNumerically(">=", 1))
		releaseOperands(stuck...)
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
	})
})
