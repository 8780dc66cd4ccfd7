// Package uninstalle2eframework is the same uninstall suite as test/uninstall, written for
// sigs.k8s.io/e2e-framework: an env func starts the cluster with its stack, and each documented
// operand-cleanup case is a feature (framework/e2eframework). The cases are the spec library's own,
// run in each feature's *testing.T: the two suites cannot drift apart.
package uninstalle2eframework

import (
	"log"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/cleanup-e2e/cleanup-e2e/framework/e2eframework"

	"example.com/widget-operator-e2e/test/operator"
)

var (
	testEnv env.Environment
	cluster = e2eframework.New(operator.ClusterConfig("widget-uninstall-e2efw"))
)

func TestMain(m *testing.M) {
	// e2e-framework's flags select the features (go test ./... -args --labels case=cleanup-abort).
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		log.Fatal(err)
	}
	// The cases run side by side (TestInParallel): each holds the APIs it uses, an AllNamespaces or
	// OLM v1 case its operator's kinds exclusively, so the cases that must not overlap take turns.
	testEnv = env.NewWithConfig(cfg.WithParallelTestEnabled())
	testEnv.Setup(cluster.Setup).Finish(cluster.Finish)
	os.Exit(testEnv.Run(m))
}

func TestUninstall(t *testing.T) {
	testEnv.TestInParallel(t, cluster.MustOperandCleanupFeatures(t, operator.Uninstall(cluster.Environment))...)
}

// The same operator under OLM v1.
func TestOLMv1Uninstall(t *testing.T) {
	testEnv.TestInParallel(t, cluster.MustOLMv1UninstallFeatures(t, operator.Uninstall(cluster.Environment))...)
}
