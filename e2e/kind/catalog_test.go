package kind

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

var _ = runsPods && Describe("widget-operator installed from the catalog", Label("catalog", "operand-cleanup", "widget-operator"), func() {
	It("upgrades along its channel without touching Widgets, and cleans them up on uninstall", func(ctx context.Context) {
		const timeout = 4 * time.Minute
		ns := "catalog-widget-" + utilrand.String(5)
		tidied := false
		tidy := func(ctx context.Context) {
			if tidied {
				return
			}
			tidied = true
			if CurrentSpecReport().Failed() {
				dir, err := artifacts.Collect(ctx, artifacts.CollectInput{Client: k8s, Provider: provider,
					Namespaces: []string{ns, widget.DefaultRecordsNamespace, "olm", "operand-cleanup"}, Spec: CurrentSpecReport().FullText()})
				AddReportEntry("artifacts", dir, err)
			}
			// A CSV a failure left owns widget-operator's CRDs: it must be gone before the APIs' hold is
			// released, or the next holder (an OLM v1 ordered uninstall) meets its claim (CleanupBlocked).
			Expect(uninstallOLMv0In(ctx, ns)).To(Succeed())
			_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
		DeferCleanup(tidy) // a failure before the hold

		By("serving bundles/catalog from a grpc CatalogSource (opm serve in the catalog image)")
		start := time.Now()
		_, err := olm.CreateCatalogSource(ctx, olm.CatalogSourceInput{Client: k8s, Namespace: ns, Name: "fixtures"})
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("catalog READY in %s\n", time.Since(start).Round(time.Millisecond))

		By("holding widget-operator's APIs: no AllNamespaces cleanup of another spec deletes this one's Widget meanwhile")
		// Taken once the catalog serves (≈ 20 s under load): serving it uses no widget API, and an AllNamespaces
		// spec of another suite waiting for the APIs would hold every other widget spec back meanwhile.
		release, err := specs.HoldAPIsOf(ctx, apis, CurrentSpecReport().FullText(),
			bundles.Dir(widget.Name, "v0.1.0"), bundles.Dir(widget.Name, "v0.2.0"), bundles.Dir(widget.Name, "v0.3.0"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(release)
		DeferCleanup(tidy) // registered after the release, so it runs before it

		By("subscribing with Manual approval from widget-operator.v0.1.0, opting in to cleanup")
		start = time.Now()
		sub, csv, err := olm.Subscribe(ctx, olm.SubscribeInput{Client: k8s, Namespace: ns,
			InstallMode: operatorsv1alpha1.InstallModeTypeOwnNamespace, CatalogSource: "fixtures",
			Package: widget.Name, Channel: "alpha", StartingCSV: "widget-operator.v0.1.0",
			Approval: operatorsv1alpha1.ApprovalManual, Cleanup: ptr.To(true), Timeout: timeout})
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("v0.1.0 Succeeded in %s\n", time.Since(start).Round(time.Millisecond))

		By("creating a Widget the operator finalizes")
		w := &fixturesv1alpha1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sample"},
			Spec: fixturesv1alpha1.WidgetSpec{Data: map[string]string{"color": "blue"}}}
		Expect(k8s.Create(ctx, w)).To(Succeed())
		sample := sampleRef(w)
		Eventually(func() error { return widget.Reconciled(ctx, k8s, sample) }).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
		uid := w.UID

		for _, to := range []string{"widget-operator.v0.2.0", "widget-operator.v0.3.0"} {
			By("upgrading " + csv.Name + " → " + to + " (approving its InstallPlan)")
			start = time.Now()
			csv, err = olm.UpgradeSubscription(ctx, olm.UpgradeSubscriptionInput{Client: k8s, Subscription: sub,
				From: csv, To: to, Timeout: timeout})
			Expect(err).NotTo(HaveOccurred())
			GinkgoWriter.Printf("%s Succeeded in %s\n", to, time.Since(start).Round(time.Millisecond))

			By("seeing the Widget untouched and the cleanup opt-in carried to " + to)
			live := &fixturesv1alpha1.Widget{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), live)).To(Succeed())
			Expect(live.UID).To(Equal(uid), "the Widget was recreated during the upgrade")
			Expect(live.DeletionTimestamp).To(BeNil(), "the upgrade must not delete operands")
			Expect(widget.Reconciled(ctx, k8s, sample)).To(Succeed())
			Eventually(func() (bool, error) {
				c, err := olm.GetCSV(ctx, k8s, ns, to)
				return err == nil && c.Spec.Cleanup.Enabled, err
			}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue(), "spec.cleanup.enabled of %s", to)
		}

		By("uninstalling: Subscription, then the CSV, whose operand cleanup removes the Widget")
		start = time.Now()
		Expect(olm.Unsubscribe(ctx, sub, olm.UninstallInput{Client: k8s, CSV: csv, Wait: true, Timeout: timeout})).To(Succeed())
		GinkgoWriter.Printf("uninstalled with cleanup in %s\n", time.Since(start).Round(time.Millisecond))
		err = k8s.Get(ctx, client.ObjectKeyFromObject(w), &fixturesv1alpha1.Widget{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Widget should be gone after a cleanup-enabled uninstall (got %v)", err)
		Expect(widget.Finalized(ctx, k8s, sample)).To(Succeed(), "the operator's finalizer should have removed the Widget's record")
	})
})

// sampleRef is the Widget as the fixture's checks take it (kind, namespace and name).
func sampleRef(w *fixturesv1alpha1.Widget) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(fixturesv1alpha1.GroupVersion.WithKind("Widget"))
	u.SetNamespace(w.Namespace)
	u.SetName(w.Name)
	return u
}
