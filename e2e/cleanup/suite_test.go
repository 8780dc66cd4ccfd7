// Package cleanup is the operand-cleanup e2e suite: real OLM, the operand-cleanup controller and the
// fixture operators, on whichever provider $PROVIDER names. Every documented case of the
// olm-deletes-operands enhancement is a spec here, most of them through the reusable spec library
// (framework/specs) that operator repos call too.
package cleanup

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	"github.com/cleanup-e2e/cleanup-e2e/e2e/internal/footprint"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/operandcleanup"
)

func TestOperandCleanup(t *testing.T) {
	suite.RunSpecs(t, "Operand Cleanup Suite")
}

var (
	cl  cluster.Environment
	k8s client.Client
)

func clusterUnderTest() cluster.Environment { return cl }

var _ = suite.SynchronizedProvider(suite.ProviderInput{Name: "cleanup", Registry: registry(), RunLeftovers: footprint.RunLeftovers()}, suite.Setup{
	Cluster: func(ctx context.Context, p cluster.Provider) {
		c, err := kube.NewClient(p.RESTConfig(), kube.MustScheme(fixturesv1alpha1.AddToScheme))
		Expect(err).NotTo(HaveOccurred())
		// On an existing cluster the provider installed what was missing and must not overwrite a
		// controller the run did not create.
		if p.Kind() != "existing" {
			Expect(components.InstallOperandCleanup(ctx, components.InstallOperandCleanupInput{Client: c})).To(Succeed())
		}
	},
	Process: func(ctx context.Context, p cluster.Provider) {
		var err error
		k8s, err = kube.NewClient(p.RESTConfig(), kube.MustScheme(fixturesv1alpha1.AddToScheme))
		Expect(err).NotTo(HaveOccurred())
		cl = cluster.Environment{Provider: p, Client: k8s}
	},
}, NodeTimeout(5*time.Minute))

// registry holds what the envtest provider runs in-process (on kind they are images on the node): the
// operand-cleanup controller and the fixture operators.
func registry() *localruntime.Registry {
	return localruntime.NewRegistry(fixtures.Images(), map[string]localruntime.Entrypoint{operandcleanupconfig.Image: operandcleanup.Main})
}
