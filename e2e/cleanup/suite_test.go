// Package cleanup is the operand-cleanup e2e suite: real OLM, the operand-cleanup controller and the
// fixture operators, on whichever provider $PROVIDER names. Every documented case of the
// olm-deletes-operands enhancement is a spec here, most of them through the reusable spec library
// (framework/specs) that operator repos call too.
package cleanup

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/e2e/internal/footprint"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

func TestOperandCleanup(t *testing.T) {
	suite.RunSpecs(t, "Operand Cleanup Suite")
}

var (
	cl  cluster.Environment
	k8s client.Client
)

func clusterUnderTest() cluster.Environment { return cl }

var _ = suite.SynchronizedProvider(testenv.Config{
	Name:     "cleanup",
	Registry: localruntime.NewRegistry(fixtures.Images()), // the fixture operators, run in-process on envtest
	Stack:    stack.Components{OLM: true, OperandCleanup: true, Footprint: footprint.Footprint()},
	Schemes:  []func(*runtime.Scheme) error{fixturesv1alpha1.AddToScheme},
}, suite.Setup{Process: func(_ context.Context, env cluster.Environment) { cl, k8s = env, env.Client }})
