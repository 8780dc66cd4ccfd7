package specs

import (
	"fmt"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// supports says whether the provider can run the operator of csv at all, before anything is
// installed: a spec that cannot pass there fails at once, naming why and where it can run, instead of
// failing later at an unrelated step.
func supports(p cluster.Provider, csv *operatorsv1alpha1.ClusterServiceVersion) error {
	limited, ok := p.(cluster.WebhookLimited)
	if !ok || len(csv.Spec.WebhookDefinitions) == 0 {
		return nil
	}
	var hooks []string
	for _, w := range csv.Spec.WebhookDefinitions {
		hooks = append(hooks, fmt.Sprintf("%s (%s)", w.GenerateName, w.Type))
	}
	return fmt.Errorf("CSV %s declares spec.webhookdefinitions %s, but the %s provider cannot call them: %s, so "+
		"OLM's webhook configurations would fail every sample. Run this suite on a cluster with nodes "+
		"(CLEANUP_E2E_PROVIDER=kind, or make e2e PROVIDER=kind), or test the bundle without its webhooks on envtest "+
		"(BundleDir: specs.MustWithoutWebhooks(bundleDir))",
		csv.Name, strings.Join(hooks, ", "), p.Kind(), limited.WebhooksUnsupported())
}
