package operandcleanup

import (
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

var _ = Describe("controller restarts", func() {
	It("starts acting only once it leads, and then at once, when a stopped controller left the Lease held", func() {
		restartController(func() {
			// What a controller stopped in the middle of acquiring the Lease leaves (its update applied,
			// its answer cancelled): a holder that will never renew. The next one must wait it out.
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: operandcleanupconfig.Namespace, Name: leaseName}}
			_, err := controllerutil.CreateOrUpdate(ctx, tenv.admin, lease, func() error {
				lease.Spec.HolderIdentity = ptrTo("stopped-while-acquiring")
				lease.Spec.LeaseDurationSeconds = ptrTo[int32](5)
				lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				return nil
			})
			Expect(err).NotTo(HaveOccurred())
		})
		// restartController returned once the new controller leads, so a CSV made now gets its finalizer
		// from the watch; a leader whose controllers never started would never add it. The suite's
		// default timeout only absorbs a loaded machine (a 3 s one was a timed test).
		ns := newNamespace("lease")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer),
			"the controller that leads should add its finalizer to CSV %s", keyOf(csv))
	})

	It("finishes a cleanup that was pending when the controller stopped", func() {
		ns := newNamespace("restart")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		key := keyOf(csv)
		Eventually(csvFinalizers(key)).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 4, testFinalizer)
		deleteCSV(csv)
		Eventually(func() string { return getCSV(key).Status.Message }).Should(HavePrefix("waiting for operator to finish cleanup for 4 CRs"))

		restartController(func() {
			releaseOperands(widgets[:2]...)
			// A CR created while the controller is down is cleaned up too.
			widgets = append(widgets, createOperands(widgetKind, ns, "late", 1, testFinalizer)...)
		})
		Eventually(func() string { return getCSV(key).Status.Message }).Should(HavePrefix("waiting for operator to finish cleanup for 3 CRs"))
		expectAll(widgets[2:], "deleting")
		releaseOperands(widgets[2:]...)
		Eventually(csvGone(key)).Should(BeTrue())
		expectAll(widgets, "absent")
	})

	It("resumes the stall clock persisted in the status instead of restarting it", func() {
		ns := newNamespace("stall-restart")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		key := keyOf(csv)
		Eventually(csvFinalizers(key)).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 2, testFinalizer)
		deleteCSV(csv)
		message := func() string { return getCSV(key).Status.Message }
		Eventually(message).Should(HavePrefix("waiting for operator to finish cleanup for 2 CRs"))
		since, count, ok := persistedProgress(getCSV(key))
		Expect(ok).To(BeTrue())
		Expect(count).To(Equal(2))

		restartController(func() {
			// More CRs while the controller is down: the message changes, but that is no progress.
			widgets = append(widgets, createOperands(widgetKind, ns, "more", 1, testFinalizer)...)
			time.Sleep(4 * time.Second)
		})
		restarted := time.Now()
		Eventually(message).Should(HavePrefix("waiting for operator to finish cleanup for 3 CRs"))
		resumed, count, _ := persistedProgress(getCSV(key))
		Expect(resumed).To(BeTemporally("==", since), "the clock resumed from the status")
		Expect(count).To(Equal(3))

		By("a stall timeout shorter than the time since the last progress fires at once and counts from it")
		updateCSV(key, func(c *v1alpha1.ClusterServiceVersion) {
			metav1.SetMetaDataAnnotation(&c.ObjectMeta, StallTimeoutAnnotation, "3s")
		})
		var stalled string
		Eventually(func() string {
			for _, e := range csvEvents(csv)() {
				if strings.HasPrefix(e, EventReasonStalled) {
					stalled = e
				}
			}
			return stalled
		}).ShouldNot(BeEmpty())
		m := regexp.MustCompile(`made no progress for (\S+);`).FindStringSubmatch(stalled)
		Expect(m).To(HaveLen(2), stalled)
		d, err := time.ParseDuration(m[1])
		Expect(err).NotTo(HaveOccurred())
		Expect(d).To(BeNumerically(">=", restarted.Sub(since)-time.Second), "counted from the last progress before the restart: %s", stalled)

		releaseOperands(widgets...)
		Eventually(csvGone(key)).Should(BeTrue())
	})

	It("refuses to delete a CSV opted in while the controller was down until the controller is back, then cleans up", func() {
		guard, err := operandcleanupconfig.Named(UnarmedGuardName)
		Expect(err).NotTo(HaveOccurred())
		Expect(guard).To(HaveLen(2), "config/operand-cleanup's %s: the policy and its binding", UnarmedGuardName)
		for _, o := range guard {
			Expect(tenv.admin.Create(ctx, o)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(tenv.admin.Delete(ctx, o))).To(Succeed()) })
		}
		ns := newNamespace("unarmed")
		var csv *v1alpha1.ClusterServiceVersion
		var widgets []*unstructured.Unstructured
		restartController(func() {
			csv = createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
			widgets = createOperands(widgetKind, ns, "w", 3)
			// The API server enforces a policy once its informers have it: probed with dry-run deletes.
			Eventually(func() error { return tenv.admin.Delete(ctx, csv, client.DryRunAll) }).
				WithTimeout(intervals.Get(intervals.SpecStep)).Should(HaveOccurred(), "the unarmed guard should come into force")
			err := tenv.admin.Delete(ctx, csv)
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "deleting the opted-in CSV the stopped controller has not armed: %v", err)
			Expect(err.Error()).To(ContainSubstring(UnarmedGuardName))
		})
		Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
		deleteCSV(csv)
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
		expectAll(widgets, "absent")
	})

	It("cleans up a CSV deleted while the controller was down", func() {
		ns := newNamespace("down")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 3)
		restartController(func() {
			deleteCSV(csv)
			Consistently(csvGone(keyOf(csv)), "500ms").Should(BeFalse())
		})
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
		expectAll(widgets, "absent")
	})
})

var _ = Describe("malformed input", func() {
	It("blocks without deleting anything when the target namespaces are unknown, and resumes once they are", func() {
		ns := newNamespace("no-og")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), owns(widgetKind)) // no olm.targetNamespaces
		key := keyOf(csv)
		Eventually(csvFinalizers(key)).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 2)
		deleteCSV(csv)
		Eventually(func() string { return getCSV(key).Status.Message }).Should(ContainSubstring("no OperatorGroup in namespace " + ns))
		Expect(getCSV(key).Status.Phase).To(Equal(PhaseCleanup))
		Eventually(csvEvents(csv)).Should(ContainElement(HavePrefix(EventReasonBlocked)))
		Consistently(allInState(widgets, "present")).Should(BeTrue())

		By("an OperatorGroup appears")
		createOperatorGroup(ns, ns)
		Eventually(csvGone(key)).Should(BeTrue())
		expectAll(widgets, "absent")
	})

	It("refuses ambiguous OperatorGroups", func() {
		ns := newNamespace("two-og")
		createOperatorGroupNamed(ns, "og-1", ns)
		createOperatorGroupNamed(ns, "og-2", ns)
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), owns(widgetKind))
		Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 1)
		deleteCSV(csv)
		Eventually(func() string { return getCSV(keyOf(csv)).Status.Message }).Should(ContainSubstring("2 OperatorGroups"))
		Consistently(allInState(widgets, "present")).Should(BeTrue())
		updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = false })
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
		expectAll(widgets, "present")
	})

	It("skips an owned CRD that is not installed and cleans up the rest", func() {
		ns := newNamespace("missing-crd")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(nothingKind, widgetKind))
		Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 1, testFinalizer)
		deleteCSV(csv)
		Eventually(func() string { return getCSV(keyOf(csv)).Status.Message }).Should(Equal(
			"waiting for operator to finish cleanup for 1 CRs; owned CRDs not installed, skipped: " + nothingKind.crdName()))
		releaseOperands(widgets...)
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
	})

	It("never deletes CRs of a CRD that is both owned and required", func() {
		ns := newNamespace("both")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind, gadgetKind), requires(gadgetKind))
		Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
		widgets, gadgets := createOperands(widgetKind, ns, "w", 1), createOperands(gadgetKind, ns, "g", 1)
		deleteCSV(csv)
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
		expectAll(widgets, "absent")
		expectAll(gadgets, "present")
	})
})
