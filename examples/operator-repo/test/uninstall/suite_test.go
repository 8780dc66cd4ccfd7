// Package uninstall plays the uninstall suite of an operator repo ("widget-operator") that imports
// cleanup-e2e to prove its operator uninstalls cleanly. It lives in test/uninstall, next to (not in)
// the test/e2e suite kubebuilder and operator-sdk scaffold. Run it with `go test ./...` from
// examples/operator-repo (PROVIDER=envtest, the default, needs the binaries `make tools` builds in
// the cleanup-e2e checkout; PROVIDER=existing runs it on the cluster of $KUBECONFIG).
package uninstall

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"

	// In your repo: your operator's API types and its entrypoint (cmd/manager's Main).
	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	widgetv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
)

func TestUninstall(t *testing.T) {
	suite.RunSpecs(t, "widget-operator uninstall")
}

// operatorImage is the image the bundle's CSV runs. On envtest the local runtime runs it in-process
// with operatorMain; on a real cluster (PROVIDER=existing) the image must be loadable by the nodes.
const operatorImage = "fixtures.local/widget-operator:v0.1.0"

// operatorMain is what the image runs (the CSV's command is `/fixture-operator widget`; the local
// runtime passes its arguments after the binary, so the subcommand comes first).
var operatorMain localruntime.Entrypoint = fixtures.Binary

// clusterUnderTest is the cluster the specs run on: on envtest each Ginkgo process gets its own, on
// a shared one (CLEANUP_E2E_PROVIDER=existing, kind) process 1 ensures the stack and the others use it.
// The stack (OLM, the operand-cleanup controller) is detected and installed only when missing, and
// what the run installed is removed at the end.
var clusterUnderTest = suite.Environment(suite.ProviderInput{
	Name:     "widget-uninstall",
	Registry: localruntime.NewRegistry(map[string]localruntime.Entrypoint{operatorImage: operatorMain}),
	Stack:    stack.ForOperandCleanup(),
	Schemes:  []func(*runtime.Scheme) error{widgetv1alpha1.AddToScheme},
}, NodeTimeout(5*time.Minute))
