// Package smoke proves the foundation: a provider with real OLM installs a CSV whose operator runs in the
// local runtime under its own ServiceAccount, and uninstalling it removes the Deployment and RBAC.
package smoke

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
)

func TestSmoke(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Smoke Suite")
}

var (
	provider cluster.Provider
	k8s      client.Client
)

var _ = BeforeSuite(func(ctx context.Context) {
	var err error
	provider, err = suite.NewProvider(ctx, suite.ProviderInput{
		Name:     "smoke",
		Registry: localruntime.NewRegistry(map[string]localruntime.Entrypoint{smokeImage: smokeOperator}),
	})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx context.Context) { Expect(provider.Stop(ctx)).To(Succeed()) })
	k8s, err = kube.NewClient(provider.RESTConfig(), kube.MustScheme())
	Expect(err).NotTo(HaveOccurred())
}, NodeTimeout(5*60e9))
