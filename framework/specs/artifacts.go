package specs

import (
	"context"

	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// collectOnFailure dumps the involved namespaces, OLM's cluster RBAC and every log of the provider
// under $ARTIFACTS (or _artifacts/) when the test t has failed. Register it with t.Cleanup after the
// cleanups that undo the test's state: it runs before them, so the artifacts show the failed state.
func collectOnFailure(ctx context.Context, t T, env func() cluster.Environment, namespaces ...string) {
	if !t.Failed() {
		return
	}
	cl := env()
	dir, err := artifacts.Collect(ctx, artifacts.CollectInput{Client: cl.Client, Provider: cl.Provider,
		Namespaces: namespaces, Spec: t.Name()})
	if err != nil {
		t.Logf("collecting artifacts: %v", err)
	}
	t.Logf("artifacts of this test: %s", dir)
}
