// Package operator is what this repo's uninstall suites know about its operator — the image its CSV
// runs, the entrypoint that image runs, its bundle, its API types and its own checks — so the Ginkgo
// suite (test/uninstall) and the e2e-framework one (test/uninstall-e2eframework) test the same thing.
// A repo with one front end keeps these lines in its suite.
package operator

import (
	"path/filepath"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"

	// In your repo: your operator's API types, its entrypoint (cmd/manager's Main) and its checks.
	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	widgetv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
)

// Image is the image the bundle's CSV runs. On envtest the local runtime runs it in-process with
// fixtures.Binary (the CSV's command is `/fixture-operator widget`; the runtime passes its arguments
// after the binary, so the subcommand comes first); on a cluster with nodes (CLEANUP_E2E_PROVIDER=kind
// or existing) the image must be loadable by the nodes.
const Image = "fixtures.local/widget-operator:v0.1.0"

// BundleDir is the registry-v1 bundle (in your repo, e.g. filepath.Join("..", "..", "bundle")).
var BundleDir = filepath.Join("..", "..", "..", "..", "bundles", "widget-operator", "v0.1.0")

// ClusterConfig is the configuration of the cluster the suites need: the stack (OLM, OLM v1, the
// operand-cleanup controller) is detected and installed only when missing, and what the run installed
// is removed at the end. OLM v1 is for the OLM v1 cases (specs.DescribeOLMv1Uninstall); a repo testing
// only OLM v0 leaves it out.
func ClusterConfig(name string) testenv.Config {
	return testenv.Config{
		Name:     name,
		Registry: localruntime.NewRegistry(map[string]localruntime.Entrypoint{Image: fixtures.Binary}), // envtest
		Images:   []string{Image},                                                                      // kind
		Stack:    stack.Components{OLM: true, OLMv1: true, OperandCleanup: true},
		Schemes:  []func(*runtime.Scheme) error{widgetv1alpha1.AddToScheme},
	}
}

// Uninstall describes the operator to the spec library, for the OLM v0 cases (cleanup unset and
// disabled keep the operands; enabled removes them, the finalizer runs, its records go, and nothing
// else is left behind; the pending-deletion listing, its cap, and abort) and the OLM v1 ones (the CRs
// deleted before the ClusterExtension; the ClusterExtension deleted with them in place, each CR's
// verdict, and a reinstall that finishes what it left).
func Uninstall(env func() cluster.Environment) specs.OperandCleanupSpecInput {
	return specs.OperandCleanupSpecInput{
		Environment: env,
		Name:        "widget-operator",
		BundleDir:   BundleDir,
		// Left out, every mode the CSV supports runs; one keeps this example quick.
		InstallModes: []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace},
		// The CSV's own samples (its alm-examples): a Widget per namespace and a cluster-scoped WidgetClass.
		Samples:    specs.MustALMExamples(BundleDir),
		Reconciled: widget.Reconciled,
		Finalized:  widget.Finalized,
		// Our finalizer keeps records in a namespace of its own: the leftovers check looks there too.
		LeftoverNamespaces: []string{widget.DefaultRecordsNamespace},
	}
}
