package kind

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
	"github.com/cleanup-e2e/cleanup-e2e/framework/bundle"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

// An operator that exits at start is a verdict on a cluster with nodes too: the install stops at its
// third exit (the kubelet's back-off makes that ≈ 30–40 s) and quotes the last error it logged, read
// from the previous container's log, instead of waiting out its timeout with "CrashLoopBackOff".
var _ = runsPods && Describe("an operator that exits at start", Label("crash-loop", "widget-operator"), func() {
	It("fails the install naming its own error line, read from its previous container", func(ctx context.Context) {
		ns := "crashloop-" + utilrand.String(5)
		dir := bundles.Dir(widget.Name, "v0.1.0")
		b, err := bundle.Load(dir)
		Expect(err).NotTo(HaveOccurred())
		// Its own OperatorGroup owns widget-operator's APIs: no AllNamespaces install of them meanwhile.
		release, err := specs.HoldAPIsOf(ctx, apis, CurrentSpecReport().FullText(), dir)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(release) // registered first, so it runs last: once the CSV below is gone
		DeferCleanup(func(ctx context.Context) {
			if CurrentSpecReport().Failed() {
				dir, err := artifacts.Collect(ctx, artifacts.CollectInput{Client: k8s, Provider: provider, Namespaces: []string{ns}, Spec: CurrentSpecReport().FullText()})
				AddReportEntry("artifacts", dir, err)
			}
			// The failed CSV still owns widget-operator's CRDs: left to the namespace's deletion after the
			// release, an OLM v1 uninstall holding those APIs next met its claim (CleanupBlocked).
			Expect(uninstallOLMv0In(ctx, ns)).To(Succeed())
			_ = k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
		deployment := &b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0]
		deployment.Args = append(deployment.Args, "--no-such-flag") // the operator refuses it and exits 1
		cs, err := kubernetes.NewForConfig(provider.RESTConfig())
		Expect(err).NotTo(HaveOccurred())

		start := time.Now()
		_, err = olm.InstallCSV(ctx, olm.InstallCSVInput{Client: k8s, CSV: b.CSV, CRDs: b.CRDs, Objects: b.Others, Namespace: ns,
			InstallMode: operatorsv1alpha1.InstallModeTypeOwnNamespace, Timeout: 4 * time.Minute, Logs: olm.PodLogsOf(cs)})
		took := time.Since(start)
		GinkgoWriter.Printf("install failed after %s: %v\n", took.Round(time.Second), err)
		Expect(err).To(MatchError(And(ContainSubstring("crash-looping"), ContainSubstring("no-such-flag"))),
			"the install must stop at the crash loop and quote the operator's own error line")
		Expect(took).To(BeNumerically("<", 2*time.Minute), "the install waited %s on an operator that exits at start", took)
	})
})
