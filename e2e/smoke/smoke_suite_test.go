// Package smoke proves the foundation: a provider with real OLM installs a CSV whose operator runs
// under its own ServiceAccount (in the local runtime on envtest, as a pod on kind), and uninstalling
// it removes the Deployment and RBAC.
package smoke

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

// smokeOperatorEnv makes this test binary run the smoke operator instead of the suite: the kind tier's
// image of smokeImage is this binary with the variable set (scripts/images.sh).
const smokeOperatorEnv = "CLEANUP_E2E_SMOKE_OPERATOR"

func TestMain(m *testing.M) {
	if os.Getenv(smokeOperatorEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		cfg, err := rest.InClusterConfig()
		if err == nil {
			err = smokeOperator(ctx, cfg, os.Args[1:], os.Getenv)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "smoke operator:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestSmoke(t *testing.T) {
	suite.RunSpecs(t, "Smoke Suite")
}

var (
	provider cluster.Provider
	k8s      client.Client
)

var smokeInput = testenv.Config{
	Name:     "smoke",
	Registry: localruntime.NewRegistry(map[string]localruntime.Entrypoint{smokeImage: smokeOperator}),
	Stack:    stack.Components{OLM: true},
}

var _ = suite.SynchronizedProvider(smokeInput, suite.Setup{Process: func(_ context.Context, env cluster.Environment) { provider, k8s = env.Provider, env.Client }})
