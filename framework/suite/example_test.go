package suite_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

// The Ginkgo uninstall suite of an operator repo, in one file beside (not in) the scaffold's
// test/e2e, e.g. test/uninstall/uninstall_test.go. The three parts are package-level declarations
// there; here they are in a function so that the example compiles without registering a suite.
func Example() {
	const image = "example.com/my-operator:v0.1.0" // the image the bundle's CSV runs

	// func TestUninstall(t *testing.T) { suite.RunSpecs(t, "my-operator uninstall") }
	testUninstall := func(t *testing.T) { suite.RunSpecs(t, "my-operator uninstall") }

	// var clusterUnderTest = suite.Environment(...): the cluster from $CLEANUP_E2E_PROVIDER (envtest by
	// default), the stack installed where missing, and a client knowing your API types. The processes
	// of `ginkgo -p` share it.
	clusterUnderTest := suite.Environment(testenv.Config{
		Name:     "my-operator-uninstall",
		Registry: localruntime.NewRegistry().RegisterBinary(image, localruntime.Binary{Package: "./cmd", Dir: "../.."}), // envtest: your main, as a child process
		Images:   []string{image},                                                                                       // kind: loaded from your Docker, never pulled
		Stack:    stack.ForOperandCleanup(),                                                                             // OLM and the operand-cleanup controller
		Schemes:  []func(*runtime.Scheme) error{ /* myv1.AddToScheme */ },
	})

	// var _ = specs.DescribeOperandCleanup(...): the documented operand-cleanup cases, in every install
	// mode the bundle's CSV supports.
	_ = specs.DescribeOperandCleanup(specs.OperandCleanupSpecInput{
		Environment: clusterUnderTest,
		Name:        "my-operator",
		BundleDir:   "../../bundle",
		Samples:     specs.MustALMExamples("../../bundle"), // the CSV's alm-examples
		Reconciled:  specs.AllOf(specs.Owns(appsv1.SchemeGroupVersion.WithKind("Deployment")), specs.HasCondition("Available")),
	})
	_ = testUninstall
}
