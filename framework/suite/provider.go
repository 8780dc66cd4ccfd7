package suite

import (
	"context"
	"fmt"
	"os"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
)

// EnvProvider names the provider to use: envtest (default for now), kind or existing.
const EnvProvider = "PROVIDER"

// ProviderInput configures NewProvider.
type ProviderInput struct {
	// Name identifies the provider in logs (the Ginkgo process number is appended).
	Name string
	// Registry holds the images the envtest provider runs in-process.
	Registry *localruntime.Registry
	// WithoutOLM starts no OLM (suites of the payload applier).
	WithoutOLM bool
}

// NewProvider starts the provider named by $PROVIDER.
func NewProvider(ctx context.Context, in ProviderInput) (cluster.Provider, error) {
	// Libraries log through controller-runtime's global logger; route it to GinkgoWriter instead of
	// letting it complain (with a stack trace) that it was never set.
	ctrllog.SetLogger(Logger().WithName("controller-runtime"))
	kind := os.Getenv(EnvProvider)
	if kind == "" {
		kind = "envtest"
	}
	switch kind {
	case "envtest":
		opts := []envtest.Option{envtest.WithName(in.Name), envtest.WithLogger(Logger().WithName(in.Name)),
			envtest.WithRegistry(in.Registry)}
		if in.WithoutOLM {
			opts = append(opts, envtest.WithoutOLM())
		}
		return envtest.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("%s=%q: unknown provider (known: envtest)", EnvProvider, kind)
	}
}
