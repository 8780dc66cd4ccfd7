package e2eframework_test

import (
	"log"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/cleanup-e2e/cleanup-e2e/framework/e2eframework"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

// The uninstall suite of an operator repo whose e2e tests are sigs.k8s.io/e2e-framework env funcs and
// features: an env func starts the cluster with its stack, and each documented operand-cleanup case is
// a feature. TestMain and TestUninstall are top-level functions of a _test.go file there; here they are
// function values so that the example compiles without running a suite.
func Example() {
	const image = "example.com/my-operator:v0.1.0" // the image the bundle's CSV runs

	// var cluster = e2eframework.New(...): nothing starts before Setup.
	cluster := e2eframework.New(testenv.Config{
		Name:     "my-operator-uninstall",
		Registry: localruntime.NewRegistry().RegisterBinary(image, localruntime.Binary{Package: "./cmd", Dir: "../.."}), // envtest
		Images:   []string{image},                                                                                       // kind
		Stack:    stack.ForOperandCleanup(),
		Schemes:  []func(*runtime.Scheme) error{ /* myv1.AddToScheme */ },
	})
	var testEnv env.Environment

	// func TestMain(m *testing.M)
	testMain := func(m *testing.M) {
		// e2e-framework's flags (go test ./... -args --labels case=cleanup-abort); env.New() reads none
		cfg, err := envconf.NewFromFlags()
		if err != nil {
			log.Fatal(err)
		}
		// the cases side by side (TestInParallel): those that must not overlap lock their APIs
		testEnv = env.NewWithConfig(cfg.WithParallelTestEnabled())
		testEnv.Setup(cluster.Setup).Finish(cluster.Finish)
		os.Exit(testEnv.Run(m))
	}

	// func TestUninstall(t *testing.T)
	testUninstall := func(t *testing.T) {
		testEnv.TestInParallel(t, cluster.MustOperandCleanupFeatures(t, specs.OperandCleanupSpecInput{
			Environment: cluster.Environment,
			Name:        "my-operator",
			BundleDir:   "../../bundle",
			Samples:     specs.MustALMExamples("../../bundle"),
		})...)
	}
	_, _ = testMain, testUninstall
}
