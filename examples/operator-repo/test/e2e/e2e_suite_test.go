// Package e2e plays the e2e suite of an operator repo ("widget-operator") that imports cleanup-e2e to
// prove its operator uninstalls cleanly. Run it with `go test ./...` from examples/operator-repo
// (PROVIDER=envtest, the default, needs the binaries `make tools` builds in the cleanup-e2e checkout;
// PROVIDER=existing runs it on the cluster of $KUBECONFIG).
package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/operandcleanup"

	// In your repo: your operator's API types and its entrypoint (cmd/manager's Main).
	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	widgetv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "widget-operator e2e")
}

// operatorImage is the image the bundle's CSV runs. On envtest the local runtime runs it in-process
// with operatorMain; on a real cluster (PROVIDER=existing) the image must be loadable by the nodes.
const operatorImage = "fixtures.local/widget-operator:v0.1.0"

// operatorMain is what the image runs (the CSV's command is `/fixture-operator widget`; the local
// runtime passes its arguments after the binary, so the subcommand comes first).
var operatorMain localruntime.Entrypoint = fixtures.Binary

var cl specs.Cluster

var _ = BeforeSuite(func(ctx context.Context) {
	registry := localruntime.NewRegistry(map[string]localruntime.Entrypoint{
		operatorImage:                  operatorMain,
		components.OperandCleanupImage: operandcleanup.Main, // OLM's operand cleanup, next to stock OLM
	})
	provider, err := suite.NewProvider(ctx, suite.ProviderInput{Name: "widget-e2e", Registry: registry})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx context.Context) { Expect(provider.Stop(ctx)).To(Succeed()) })

	c, err := kube.NewClient(provider.RESTConfig(), kube.MustScheme(widgetv1alpha1.AddToScheme))
	Expect(err).NotTo(HaveOccurred())
	cl = specs.Cluster{Provider: provider, Client: c}
	if provider.Kind() != "existing" { // the existing provider installs it when the cluster lacks it
		Expect(components.InstallOperandCleanup(ctx, components.InstallOperandCleanupInput{Client: c})).To(Succeed())
	}
}, NodeTimeout(5*time.Minute))
