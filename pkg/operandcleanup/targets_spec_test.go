package operandcleanup

import (
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/utils/ptr"
)

// OLM rewrites olm.targetNamespaces on a CSV being deleted when its OperatorGroup changes, but no longer
// updates the operator's Deployment: the operator keeps watching the namespaces of the uninstall's start.
var _ = Describe("target namespaces changed during an uninstall", func() {
	retarget := func(csv *v1alpha1.ClusterServiceVersion, namespaces ...string) {
		sort.Strings(namespaces)
		updateCSV(keyOf(csv), targetNamespaces(strings.Join(namespaces, ",")))
	}

	It("waits for a CR it deleted in a namespace removed from the targets, across a restart, and leaves the operator's own namespace alone", func() {
		op, a, b := newNamespace("tgt-op"), newNamespace("tgt-a"), newNamespace("tgt-b")
		csv := createCSV(op, "op.v1", cleanupEnabled(true), targetNamespaces(strings.Join(sorted(a, b), ",")), owns(widgetKind))
		key := keyOf(csv)
		Eventually(csvFinalizers(key)).Should(ContainElement(Finalizer))
		inA := createOperands(widgetKind, a, "w", 1, testFinalizer)
		inB := createOperands(widgetKind, b, "w", 1, testFinalizer)
		inOp := createOperands(widgetKind, op, "own", 1)

		deleteCSV(csv)
		Eventually(allInState(append(inA, inB...), "deleting")).Should(BeTrue())
		Expect(getCSV(key).Annotations).To(HaveKeyWithValue(UninstallTargetsAnnotation, strings.Join(sorted(a, b), ",")),
			"the targets the operator watches are recorded before the first Delete")

		By("the OperatorGroup drops " + b + ": OLM rewrites the deleted CSV's targets, its Deployment still watches " + b)
		retarget(csv, a)
		releaseOperands(inA...)
		Consistently(csvGone(key)).WithTimeout(3*time.Second).Should(BeFalse(),
			"the CSV (and with it the operator) went while the CR it deleted in %s still waited for the operator's finalizer", b)
		Eventually(func() []string { return pendingNames(getCSV(key)) }).Should(ConsistOf(testGroup + "/Widget/" + b + "/w-0"))

		By("a restarted controller still knows where the operator watches")
		restartController(func() {})
		Consistently(csvGone(key)).WithTimeout(2*time.Second).Should(BeFalse(), "released after a restart with a CR of %s still being deleted", b)

		releaseOperands(inB...)
		Eventually(csvGone(key)).Should(BeTrue())
		expectAll(inOp, "present")
	})

	It("never deletes in a namespace added to the targets during the uninstall: the operator does not watch it", func() {
		op, a, c := newNamespace("tgt-op"), newNamespace("tgt-a"), newNamespace("tgt-c")
		csv := createCSV(op, "op.v1", cleanupEnabled(true), targetNamespaces(a), owns(widgetKind))
		key := keyOf(csv)
		Eventually(csvFinalizers(key)).Should(ContainElement(Finalizer))
		inA := createOperands(widgetKind, a, "w", 1, testFinalizer)
		inC := createOperands(widgetKind, c, "w", 2)
		deleteCSV(csv)
		Eventually(allInState(inA, "deleting")).Should(BeTrue())
		retarget(csv, a, c)
		Consistently(allInState(inC, "present")).WithTimeout(2 * time.Second).Should(BeTrue())
		releaseOperands(inA...)
		Eventually(csvGone(key)).Should(BeTrue())
		expectAll(inC, "present")
	})

	It("says OperatorNotRunning while the operator's Deployment is scaled to 0, and finishes once it is back", func() {
		ns := newNamespace("scaled")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		key := keyOf(csv)
		Eventually(csvFinalizers(key)).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 2, testFinalizer)
		deleteCSV(csv)
		Eventually(allInState(widgets, "deleting")).Should(BeTrue())

		scale := func(n int32) {
			Eventually(func() error {
				d := operatorDeployment(ns)
				d.Spec.Replicas = ptr.To(n)
				return tenv.admin.Update(ctx, d)
			}).Should(Succeed())
		}
		scale(0)
		Eventually(reasonOf(key)).Should(Equal(ReasonOperatorNotRunning))
		Expect(getCSV(key).Status.Message).To(And(ContainSubstring("no running replica"),
			ContainSubstring("Deployment "+ns+"/operator is scaled to 0"), ContainSubstring("2 CRs")))
		Eventually(csvEvents(csv)).Should(ContainElement(And(HavePrefix(EventReasonNotRunning), ContainSubstring("scaled to 0"))))

		scale(1)
		Eventually(reasonOf(key)).Should(Equal(ReasonWaitingOnCleanup))
		releaseOperands(widgets...)
		Eventually(csvGone(key)).Should(BeTrue())
	})
})

func sorted(s ...string) []string {
	sort.Strings(s)
	return s
}
