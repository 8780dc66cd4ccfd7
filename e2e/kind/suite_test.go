// Package kind holds the specs that need a cluster with nodes (PROVIDER=kind): installs through OLM's
// catalog machinery, which runs pods (the catalog's `opm serve`, bundle unpack Jobs) that the envtest
// tier cannot run. On an existing cluster they run when CLEANUP_E2E_CATALOG=1 says that its nodes have
// the catalog, bundle and operator images (scripts/images.sh builds them; load or push them first).
// Elsewhere the suite builds no spec and starts nothing.
package kind

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/e2e/internal/footprint"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

func TestKind(t *testing.T) {
	suite.RunSpecs(t, "Kind Suite")
}

// runsPods is decided while the tree is built: the specs exist only where the provider runs pods and
// the nodes have the images (kind loads them; an existing cluster's nodes have them when the user says
// so with CLEANUP_E2E_CATALOG=1).
var runsPods = testenv.Config{}.LoadsImages() || (testenv.Config{}.RunsPods() && os.Getenv("CLEANUP_E2E_CATALOG") == "1")

var (
	provider cluster.Provider
	k8s      client.Client
	apis     cluster.APILocker
)

var _ = runsPods && suite.SynchronizedProvider(testenv.Config{
	Name: "kind",
	// OLM v1 on kind only: testenv deploys it there (framework/olmv1/incluster); an existing cluster
	// running this suite need not have it.
	Stack:   stack.Components{OLM: true, OLMv1: testenv.Config{}.LoadsImages(), OperandCleanup: true, Footprint: footprint.Footprint()},
	Schemes: []func(*runtime.Scheme) error{fixturesv1alpha1.AddToScheme},
}, suite.Setup{Process: func(_ context.Context, env cluster.Environment) {
	provider, k8s, apis = env.Provider, env.Client, env.APIs
}})

// uninstallOLMv0In deletes the Subscriptions, then the CSVs, of namespace ns (a Subscription left would
// install its CSV again) and waits until no CSV is left there.
func uninstallOLMv0In(ctx context.Context, ns string) error {
	if err := k8s.DeleteAllOf(ctx, &operatorsv1alpha1.Subscription{}, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("deleting the Subscriptions of %s: %w", ns, err)
	}
	if err := k8s.DeleteAllOf(ctx, &operatorsv1alpha1.ClusterServiceVersion{}, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("deleting the CSVs of %s: %w", ns, err)
	}
	return intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		l := &operatorsv1alpha1.ClusterServiceVersionList{}
		if err := k8s.List(ctx, l, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var left []string
		for _, c := range l.Items {
			left = append(left, fmt.Sprintf("%s (finalizers %v, %s)", c.Name, c.Finalizers, olm.DescribeCSV(&c)))
		}
		return len(left) == 0, "CSVs left in " + ns + ": " + strings.Join(left, "; ")
	})
}
