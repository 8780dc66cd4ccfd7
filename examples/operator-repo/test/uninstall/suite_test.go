// Package uninstall plays the Ginkgo uninstall suite of an operator repo ("widget-operator") that
// imports cleanup-e2e to prove its operator uninstalls cleanly. It lives in test/uninstall, next to
// (not in) the test/e2e suite kubebuilder and operator-sdk scaffold. Run it with `go test ./...` from
// examples/operator-repo (CLEANUP_E2E_PROVIDER=envtest, the default, needs the binaries `make tools`
// builds in the cleanup-e2e checkout; =existing runs it on the cluster of $KUBECONFIG).
package uninstall

import (
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"

	"example.com/widget-operator-e2e/test/operator"
)

func TestUninstall(t *testing.T) {
	// randomized order, JUnit under $ARTIFACTS; an Eventually without a timeout or a context waits
	// intervals.SpecStep (2 min × CLEANUP_E2E_WAIT_SCALE), not Gomega's 1 s, polling every 100 ms
	suite.RunSpecs(t, "widget-operator uninstall")
}

// The Ginkgo processes of `ginkgo -p` share one cluster on every provider, envtest included: process 1
// starts it (or connects to it) and ensures the stack, the others connect to it.
var clusterUnderTest = suite.Environment(operator.ClusterConfig("widget-uninstall"))

var _ = specs.DescribeOperandCleanup(operator.Uninstall(clusterUnderTest))

// The same operator under OLM v1: the ClusterExtension's uninstall, one line more.
var _ = specs.DescribeOLMv1Uninstall(operator.Uninstall(clusterUnderTest))
