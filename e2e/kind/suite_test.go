// Package kind holds the specs that need a cluster with nodes (PROVIDER=kind): installs through OLM's
// catalog machinery, which runs pods (the catalog's `opm serve`, bundle unpack Jobs) that the envtest
// tier cannot run. On other providers the suite builds no spec and starts nothing.
package kind

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
)

func TestKind(t *testing.T) {
	suite.RunSpecs(t, "Kind Suite")
}

// runsPods is decided while the tree is built: the specs exist only where the provider runs pods.
var runsPods = os.Getenv(suite.EnvProvider) == "kind"

var (
	provider cluster.Provider
	k8s      client.Client
)

var _ = runsPods && suite.SynchronizedProvider(suite.ProviderInput{Name: "kind"}, suite.Setup{
	Cluster: func(ctx context.Context, p cluster.Provider) {
		c, err := kube.NewClient(p.RESTConfig(), kube.MustScheme(fixturesv1alpha1.AddToScheme))
		Expect(err).NotTo(HaveOccurred())
		Expect(components.InstallOperandCleanup(ctx, components.InstallOperandCleanupInput{Client: c})).To(Succeed())
	},
	Process: func(ctx context.Context, p cluster.Provider) {
		var err error
		provider = p
		k8s, err = kube.NewClient(p.RESTConfig(), kube.MustScheme(fixturesv1alpha1.AddToScheme))
		Expect(err).NotTo(HaveOccurred())
	},
}, NodeTimeout(10*time.Minute))
