package applier_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// Regressions of custom resources whose CRD is missing or goes away. Each spec uses its own API group,
// so that deleting its CRD removes the whole group from the API server (no other CRD serves it).
var _ = Describe("payload applier: custom resources without their CRD", func() {
	var (
		ctx                  context.Context
		sysNS, appNS, coName string
		group                string
	)

	BeforeEach(func() {
		ctx = context.Background()
		sysNS, appNS, coName = unique("applier"), unique("app"), unique("payload-applier")
		group = unique("gone") + ".cleanup-e2e.io"
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sysNS}})).To(Succeed())
	})

	// Regression: the retried RESTMapper lookup of a delete-annotated manifest was scoped inside an if,
	// so a kind that is not served (CRD never installed) fell through with a nil mapping and panicked.
	It("completes an update deleting a custom resource whose CRD was never installed, with the not-found warning", func() {
		a := newApplier(applier.Options{Namespace: sysNS, ClusterOperatorName: coName})
		v1 := pt.New("1.0.0").File(nsFile, pt.Namespace(appNS))
		Expect(runPass(ctx, a, v1, applier.ModeInstall).Err).NotTo(HaveOccurred())

		const file = "0000_10_app_00_ghost.yaml"
		v2 := v1.Clone().Version("1.0.1").File(file, pt.Delete(pt.Object(group+"/v1", "Ghost", appNS, "g1")))
		res := runPass(ctx, a, v2, applier.ModeUpdate)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Completed).To(BeTrue())
		ghost := payload.Resource{Group: group, Version: "v1", Kind: "Ghost", Namespace: appNS, Name: "g1"}
		Expect(res.Warnings()).To(Equal([]string{payload.MsgNotFound(ghost)}))
		Expect(res.Warnings()[0]).To(Equal(`Ghost "` + appNS + `/g1" not found. It either has already been removed or it has never been installed on this cluster.`))
		t := res.Task(file)
		Expect(t.Outcome).To(Equal(applier.OutcomeDeleted))
		Expect(t.Err).NotTo(HaveOccurred())
		Expect(t.Resource).To(Equal(ghost.String()))
		Expect(res.DeletesInProgress).To(BeEmpty())
		Expect(res.Upgradeable).To(BeTrue())

		res = runPass(ctx, a, v2, applier.ModeReconcile)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Warnings()).To(BeEmpty(), "warned once")
		Expect(res.Task(file).Outcome).To(Equal(applier.OutcomeDeleted))
	})

	// Regression: once the CRD is gone, a Get of its CR (kind still in the applier's cached RESTMapper)
	// is a bare 404, which client-go also tags as an unexpected server response; it was retried until
	// TaskRetryTimeout on every pass. With a long TaskRetryTimeout and a pass deadline of a few seconds,
	// the old behaviour runs into the deadline.
	It("reports a custom resource deleted together with its CRD as completed without retrying", func() {
		a := newApplier(applier.Options{Namespace: sysNS, ClusterOperatorName: coName, TaskRetryTimeout: 10 * time.Minute})
		const (
			crdF    = "0000_00_gadgets_00_crd.yaml"
			gadgetF = "0000_10_app_00_gadget.yaml"
		)
		hold := group + "/hold"
		gadget := func(finalizers ...string) *unstructured.Unstructured {
			return pt.WithFinalizers(pt.Object(group+"/v1", "Gadget", appNS, "g1"), finalizers...)
		}
		crdName := "gadgets." + group
		v1 := pt.New("1.0.0").
			File(crdF, pt.CRD(group, "Gadget", "gadgets", true)).
			File(nsFile, pt.Namespace(appNS)).
			File(gadgetF, gadget(hold))
		Expect(runPass(ctx, a, v1, applier.ModeInstall).Err).NotTo(HaveOccurred())

		// The update deletes both; the finalizer keeps the CR (and so the CRD) until released, so the
		// update pass itself deterministically sees both objects and requests both deletes.
		v2 := v1.Clone().Version("1.0.1").
			File(crdF, pt.Delete(pt.CRD(group, "Gadget", "gadgets", true))).
			File(gadgetF, pt.Delete(gadget()))
		crdRes := payload.Resource{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: crdName}
		gRes := payload.Resource{Group: group, Version: "v1", Kind: "Gadget", Namespace: appNS, Name: "g1"}
		res := runPass(ctx, a, v2, applier.ModeUpdate)
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Texts()).To(ContainElements(payload.MsgDeleteRequested(crdRes), payload.MsgDeleteRequested(gRes)))
		Expect(res.DeletesInProgress).To(ConsistOf(crdRes.String(), gRes.String()))

		dyn, err := dynamic.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		gadgets := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}).Namespace(appNS)
		Eventually(func() error {
			g, err := gadgets.Get(ctx, "g1", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			g.SetFinalizers(nil)
			_, err = gadgets.Update(ctx, g, metav1.UpdateOptions{})
			return err
		}).Should(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{}))
		}).WithTimeout(time.Minute).Should(BeTrue(), "CRD deleted")
		// The precondition of the bug: the CR's URL is no longer served, a bare 404.
		Eventually(func() bool {
			_, err := gadgets.Get(ctx, "g1", metav1.GetOptions{})
			return apierrors.IsNotFound(err) && apierrors.IsUnexpectedServerError(err)
		}).WithTimeout(time.Minute).Should(BeTrue(), "Get of the CR is a bare 404")

		passCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		start := time.Now()
		res = runPass(passCtx, a, v2, applier.ModeReconcile)
		Expect(passCtx.Err()).NotTo(HaveOccurred(), "the pass ran into its deadline after %v: the CR's NotFound was retried", time.Since(start))
		Expect(res.Err).NotTo(HaveOccurred())
		Expect(res.Completed).To(BeTrue())
		Expect(res.Warnings()).To(BeEmpty())
		Expect(res.Texts()).To(ContainElements(payload.MsgDeleteCompleted(crdRes), payload.MsgDeleteCompleted(gRes)))
		Expect(res.Task(gadgetF).Outcome).To(Equal(applier.OutcomeDeleted))
		Expect(res.Task(crdF).Outcome).To(Equal(applier.OutcomeDeleted))
		Expect(res.DeletesInProgress).To(BeEmpty())
		Expect(res.Upgradeable).To(BeTrue())
	})
})
