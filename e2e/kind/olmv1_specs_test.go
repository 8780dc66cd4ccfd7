package kind

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/gizmo"
	stackfixture "github.com/cleanup-e2e/cleanup-e2e/fixtures/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/bundle"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/leftovers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

// The spec library's OLM v1 cases on kind for gizmo-operator, whose CSV requires the Widget API:
// OLM v1 resolves no dependencies, so its bundle goes without the requirement and each case installs
// the Widget CRDs first (widget-operator's own OLM v1 cases run from examples/operator-repo).
var _ = runsPods && testenv.Config{}.LoadsImages() && specs.DescribeOLMv1Uninstall(specs.OperandCleanupSpecInput{
	Environment: kindCluster,
	Name:        "gizmo-v1",
	BundleDir:   specs.MustWithoutRequiredAPIs(bundles.Dir("gizmo-operator", "v0.1.0")),
	Samples:     gizmo.Samples,
	Reconciled:  gizmo.Reconciled,
	BeforeInstall: func(ctx context.Context, c client.Client) error {
		widgets, err := bundle.Load(bundles.Dir("widget-operator", "v0.1.0"))
		if err != nil {
			return err
		}
		for _, crd := range widgets.CRDs { // the one CRD gizmo-operator requires: its spec holds that API only
			if crd.Name == "widgets.fixtures.cleanup-e2e.io" {
				return kube.ApplyCRDs(ctx, c, crd)
			}
		}
		return nil
	},
	ExpectedLeftovers: []leftovers.Matcher{{Kind: "Widget", Name: gizmo.WidgetName("*"),
		Reason: "gizmo-operator leaves the Widget it made: Widget is an API it requires, not one it owns"}},
})

// The same cases for stack-operator, whose finalizer deletes a Stack's children (a second kind it
// owns, each with a finalizer of its own) before the Stack: with Pods, a real kubelet and the
// garbage collector of a cluster with nodes.
var _ = runsPods && testenv.Config{}.LoadsImages() && specs.DescribeOLMv1Uninstall(specs.OperandCleanupSpecInput{
	Environment: kindCluster,
	Name:        "stack-v1",
	BundleDir:   bundles.Dir("stack-operator", "v0.1.0"),
	Samples:     stackfixture.Samples,
	Reconciled:  stackfixture.Reconciled,
})

// kindCluster is the kind cluster the suite shares with the other runs, for the spec library.
func kindCluster() cluster.Environment {
	return cluster.Environment{Provider: provider, Client: k8s, APIs: apis}
}
