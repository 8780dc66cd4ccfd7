package kind

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// OLM v1 on kind: the managers as Deployments (framework/olmv1/incluster, deployed by the stack), the
// bundle and catalog served to them from the registry the cluster publishes (on kind's Docker network),
// and the extension's operator a Pod with a projected ServiceAccount token, which envtest's local
// runtime is not (docs/olm-v1.md).
var _ = runsPods && Describe("OLM v1 on kind: deleting a ClusterExtension", Ordered, Label("olmv1", "widget-operator"), func() {
	BeforeAll(func(ctx context.Context) {
		if provider.Kind() != "kind" {
			Skip("OLM v1's tier needs the kind provider: the stack deploys OLM v1 there, its registry on kind's Docker network")
		}
		start := time.Now()
		// the stack's OLM v1 (testenv: incluster.StartOnKind, shared by every run on the cluster)
		reg, err := olmv1.Published(ctx, k8s)
		Expect(err).NotTo(HaveOccurred())
		catalogRef, err := olmv1.PushPackage(ctx, reg, "e2e-kind/widget-operator", bundles.Dir(widget.Name, "v0.1.0"))
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("widget-operator v0.1.0 and its catalog pushed to %s in %s\n", reg.Push, since(start))

		By("serving the catalog (ClusterCatalog, catalogd pulling from the registry)")
		cat := olmv1.ClusterCatalog(olmv1Catalog, catalogRef)
		// catalogd's webhook may not answer for a moment after its Deployment is available
		Eventually(func() error { return client.IgnoreAlreadyExists(k8s.Create(ctx, cat.DeepCopy())) }).
			WithContext(ctx).WithTimeout(intervals.Get(intervals.WebhookServing)).Should(Succeed())
		DeferCleanup(func(ctx context.Context) {
			if CurrentSpecReport().Failed() {
				collectArtifacts(ctx, olmv1.SystemNamespace)
			}
			Expect(client.IgnoreNotFound(k8s.Delete(ctx, cat))).To(Succeed())
		})
		Expect(olmv1.WaitCondition(ctx, k8s, intervals.CatalogReady, cat, "Serving")).To(Succeed())
		GinkgoWriter.Printf("catalog %s Serving %s after the start\n", olmv1Catalog, since(start))
	})

	It("leaves each Widget with its verdict when the ClusterExtension is deleted while they exist", func(ctx context.Context) {
		x := installWidgetExtension(ctx)
		deleted := time.Now()
		Expect(k8s.Delete(ctx, x.ce)).To(Succeed())
		x.waitSettled(ctx, deleted)
		verdicts := x.judge(ctx)
		GinkgoWriter.Printf("%s after deleting ClusterExtension %s:\n%s\n", since(deleted), x.ce.GetName(), olmv1.Report(verdicts))
		AddReportEntry("verdicts", olmv1.Report(verdicts))

		// As measured on kind (docs/olm-v1.md): most Widgets stuck Terminating, now and then one finalized
		// (the operator loses its RBAC while it handles the deletions): a race, as on envtest.
		failed := olmv1.UninstallNotClean(ctx, k8s, "deleting a ClusterExtension on kind", widgetsCRD, verdicts)
		Expect(failed).To(BeEmpty(), strings.Join(failed, "\n"))
	})

	It("lets the operator finalize every Widget when they are deleted before the ClusterExtension", func(ctx context.Context) {
		x := installWidgetExtension(ctx)
		for _, w := range x.widgets {
			Expect(k8s.Delete(ctx, w)).To(Succeed())
		}
		for _, w := range x.widgets {
			Expect(intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
				err := k8s.Get(ctx, client.ObjectKeyFromObject(w), w.DeepCopy())
				return apierrors.IsNotFound(err), fmt.Sprintf("Widget %s/%s still there (error %v)", w.GetNamespace(), w.GetName(), err)
			})).To(Succeed(), "Widget %s/%s to be gone while its operator runs", w.GetNamespace(), w.GetName())
		}
		deleted := time.Now()
		Expect(k8s.Delete(ctx, x.ce)).To(Succeed())
		x.waitSettled(ctx, deleted)
		verdicts := x.judge(ctx)
		GinkgoWriter.Printf("verdicts:\n%s\n", olmv1.Report(verdicts))
		for _, v := range verdicts {
			Expect(v.Verdict).To(Equal(olmv1.Finalized), "Widget %s/%s when the CRs go before the ClusterExtension; all verdicts:\n%s",
				v.Namespace, v.Name, olmv1.Report(verdicts))
		}
		for _, name := range widgetCRDs {
			Expect(intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
				err := k8s.Get(ctx, types.NamespacedName{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
				return apierrors.IsNotFound(err), fmt.Sprintf("CRD %s still there (error %v)", name, err)
			})).To(Succeed(), "CRD %s to go with ClusterExtension %s once no Widget is left", name, x.ce.GetName())
		}
		GinkgoWriter.Printf("CRDs %v gone %s after deleting the ClusterExtension\n", widgetCRDs, since(deleted))
	})
})

const widgetsCRD = "widgets.fixtures.cleanup-e2e.io"

// olmv1Catalog is the ClusterCatalog of these specs; their ClusterExtensions select it, since other
// suites' catalogs on the cluster may serve widget-operator too.
const olmv1Catalog = "e2e-kind-widget-operator"

// widgetCRDs are widget-operator v0.1.0's CRDs.
var widgetCRDs = []string{widgetsCRD, "widgetclasses.fixtures.cleanup-e2e.io"}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

func collectArtifacts(ctx context.Context, namespaces ...string) {
	dir, err := artifacts.Collect(ctx, artifacts.CollectInput{Client: k8s, Provider: provider,
		Namespaces: append(namespaces, widget.DefaultRecordsNamespace), Spec: CurrentSpecReport().FullText()})
	if err != nil {
		GinkgoWriter.Printf("artifacts: %v\n", err)
	}
	AddReportEntry("artifacts", dir)
}
