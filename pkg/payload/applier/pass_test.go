package applier_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// runPass loads the payload b builds and runs one pass of a in mode, printing its messages to the
// spec's output; the pass's error is in the Result.
func runPass(ctx context.Context, a *applier.Applier, b *pt.Builder, mode applier.Mode) applier.Result {
	GinkgoHelper()
	p, err := b.Load()
	Expect(err).NotTo(HaveOccurred())
	res, _ := a.Run(ctx, p, mode)
	for _, m := range res.Messages {
		GinkgoWriter.Println(m.String())
	}
	return res
}

// specEnv is one spec's applier setup: its namespace (state ConfigMap), the namespace its payloads
// create, its own ClusterOperator, and a base payload (the Widget CRD and the app namespace).
type specEnv struct {
	sysNS, appNS, coName string
	base                 *pt.Builder
}

func newSpecEnv(ctx context.Context) specEnv {
	GinkgoHelper()
	e := specEnv{sysNS: unique("applier"), appNS: unique("app"), coName: unique("payload-applier")}
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.sysNS}})).To(Succeed())
	e.base = pt.New("1.0.0").File(crdFile, pt.CRD(widgetGroup, "Widget", widgetsCRDPlural, true)).File(nsFile, pt.Namespace(e.appNS))
	return e
}

// applier returns a new applier (a restarted process) of this spec, opts completed with its names.
func (e specEnv) applier(opts applier.Options) *applier.Applier {
	opts.Namespace, opts.ClusterOperatorName = e.sysNS, e.coName
	return newApplier(opts)
}
