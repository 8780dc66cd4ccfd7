package operandcleanup

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var _ = Describe("library constructor", func() {
	It("runs from New(mgr, Options).SetupWithManager and keeps operand informers only while a cleanup runs", func() {
		restartController(func() {
			mgr, err := ctrl.NewManager(tenv.cfg, ctrl.Options{
				Scheme: NewScheme(), Cache: CacheOptions(), Logger: GinkgoLogr,
				Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
				Controller: config.Controller{SkipNameValidation: ptr.To(true)},
			})
			Expect(err).NotTo(HaveOccurred())
			r := New(mgr, Options{StatusUpdateInterval: -1})
			Expect(r.SetupWithManager(mgr)).To(Succeed())
			mctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- mgr.Start(mctx) }()
			defer func() { cancel(); Eventually(done).Should(Receive(BeNil())) }()

			ns := newNamespace("library")
			csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
			Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
			Expect(r.watches.tracked()).To(BeEmpty(), "no operand watch before a cleanup")
			widgets := createOperands(widgetKind, ns, "w", 2, testFinalizer)
			deleteCSV(csv)
			widgetGK := schema.GroupKind{Group: testGroup, Kind: "Widget"}
			Eventually(r.watches.tracked).Should(ConsistOf(widgetGK))
			Eventually(allInState(widgets, "deleting")).Should(BeTrue())
			releaseOperands(widgets...)
			Eventually(csvGone(keyOf(csv))).Should(BeTrue())
			Eventually(r.watches.tracked).Should(BeEmpty())
		})
	})
})
