// Package uninstall plays the uninstall suite of an operator repo ("widget-operator") that imports
// cleanup-e2e to prove its operator uninstalls cleanly. It lives in test/uninstall, next to (not in)
// the test/e2e suite kubebuilder and operator-sdk scaffold. Run it with `go test ./...` from
// examples/operator-repo (PROVIDER=envtest, the default, needs the binaries `make tools` builds in
// the cleanup-e2e checkout; PROVIDER=existing runs it on the cluster of $KUBECONFIG).
package uninstall

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/operandcleanup"

	// In your repo: your operator's API types and its entrypoint (cmd/manager's Main).
	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	widgetv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
)

func TestUninstall(t *testing.T) {
	suite.RunSpecs(t, "widget-operator uninstall")
}

// operatorImage is the image the bundle's CSV runs. On envtest the local runtime runs it in-process
// with operatorMain; on a real cluster (PROVIDER=existing) the image must be loadable by the nodes.
const operatorImage = "fixtures.local/widget-operator:v0.1.0"

// operatorMain is what the image runs (the CSV's command is `/fixture-operator widget`; the local
// runtime passes its arguments after the binary, so the subcommand comes first).
var operatorMain localruntime.Entrypoint = fixtures.Binary

var cl cluster.Environment

// clusterUnderTest is the cluster the specs run on, known once the suite has set it up.
func clusterUnderTest() cluster.Environment { return cl }

// On envtest each Ginkgo process gets a cluster of its own; on a shared one (PROVIDER=existing, kind)
// only process 1 installs, and the others wait for it.
var _ = suite.SynchronizedProvider(suite.ProviderInput{
	Name: "widget-uninstall",
	// On envtest nothing pulls images: the local runtime runs each registered image in-process, calling
	// its Main (docs/CONTRACTS.md) as the CSV's Deployment says, impersonating its ServiceAccount.
	Registry: localruntime.NewRegistry(map[string]localruntime.Entrypoint{
		operatorImage:                  operatorMain,
		components.OperandCleanupImage: operandcleanup.Main, // OLM's operand cleanup, next to stock OLM
	}),
}, suite.Setup{
	Cluster: func(ctx context.Context, p cluster.Provider) {
		if p.Kind() == "existing" { // the existing provider installs it when the cluster lacks it
			return
		}
		c, err := kube.NewClient(p.RESTConfig(), kube.MustScheme())
		Expect(err).NotTo(HaveOccurred())
		Expect(components.InstallOperandCleanup(ctx, components.InstallOperandCleanupInput{Client: c})).To(Succeed())
	},
	Process: func(ctx context.Context, p cluster.Provider) {
		c, err := kube.NewClient(p.RESTConfig(), kube.MustScheme(widgetv1alpha1.AddToScheme))
		Expect(err).NotTo(HaveOccurred())
		cl = cluster.Environment{Provider: p, Client: c}
	},
}, NodeTimeout(5*time.Minute))
