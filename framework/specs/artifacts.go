package specs

import (
	"context"

	. "github.com/onsi/ginkgo/v2"

	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// CollectOnFailure dumps the involved namespaces, OLM's cluster RBAC and every log of the provider
// under $ARTIFACTS (or _artifacts/) when the current spec has failed. Call it from an AfterEach, which
// runs before the spec's DeferCleanup undoes its state, or from a DeferCleanup registered last.
func CollectOnFailure(ctx context.Context, env func() cluster.Environment, namespaces ...string) {
	{
		if !CurrentSpecReport().Failed() {
			return
		}
		cl := env()
		dir, err := artifacts.Collect(ctx, artifacts.CollectInput{Client: cl.Client, Provider: cl.Provider,
			Namespaces: namespaces, Spec: CurrentSpecReport().FullText()})
		if err != nil {
			GinkgoWriter.Printf("collecting artifacts: %v\n", err)
		}
		GinkgoWriter.Printf("artifacts of this spec: %s\n", dir)
	}
}
