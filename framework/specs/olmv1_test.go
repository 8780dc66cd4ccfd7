package specs_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// The OLM v1 cases of the spec library, run as an operator repo runs them (testenv with OLM v1 in the
// stack, the cases of specs.OLMv1Cases) on widget-operator, then the mutation checks under OLM v1: the
// CRs-first case must fail against an operator that never reconciles, never finalizes or leaks, naming
// the defect in the wait that must catch it, and pass against the real one.
func TestOLMv1Cases(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and OLM v1")
	}
	if _, err := olmv1.OperatorController.Path(); err != nil {
		t.Skipf("OLM v1 not built (make tools): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SuiteSetup)+intervals.Scaled(12*time.Minute))
	defer cancel()
	registry, use := mutableWidget()
	env, err := testenv.Start(ctx, testenv.Config{Name: "olmv1-cases", Provider: "envtest", Log: testr.New(t),
		Registry: registry, Stack: stack.ForOLMv1Uninstall(),
		Schemes: []func(*runtime.Scheme) error{fixturesv1alpha1.AddToScheme}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop(context.Background()) }()
	bundle := bundles.Dir("widget-operator", "v0.1.0")
	in := specs.OperandCleanupSpecInput{
		Environment: func() cluster.Environment { return env.Environment }, Name: "widget-v1", BundleDir: bundle,
		Samples: specs.MustALMExamples(bundle), Reconciled: widget.Reconciled, Finalized: widget.Finalized,
		LeftoverNamespaces: []string{widget.DefaultRecordsNamespace},
	}
	cases, err := specs.OLMv1Cases(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { c.Run(ctx, specs.FromTesting(t)) })
	}

	crsFirst, err := specs.OLMv1CRsFirstCase(in)
	if err != nil {
		t.Fatal(err)
	}
	specs.CheckMutants(ctx, t, crsFirst,
		specs.Mutant{Name: string(widget.NeverReconciles), Use: use(widget.NeverReconciles),
			Want: []string{"operator should reconcile Widget", "has no " + widget.Finalizer + " finalizer yet"}, CaughtBy: specs.WaitReconciled},
		specs.Mutant{Name: string(widget.NeverFinalizes), Use: use(widget.NeverFinalizes),
			Want: []string{"the operator's finalizer should have cleaned up after Widget", "still exists"}, CaughtBy: specs.WaitRemoved},
		specs.Mutant{Name: string(widget.LeaksAnObject), Use: use(widget.LeaksAnObject),
			Want: []string{"left behind by the installation", "leaked"}, CaughtBy: specs.WaitLeftovers},
		specs.Mutant{Name: string(widget.KeepsItsFinalizer), Use: use(widget.KeepsItsFinalizer),
			Want:     []string{"operands that cleanup must remove", "kept by finalizer(s) [" + widget.Finalizer + "], which the spec did not add"},
			CaughtBy: specs.WaitRemoved},
	)
}

// The spec library names the controller's opt-ins without linking the controller.
func TestOptInsMatchTheController(t *testing.T) {
	for _, c := range [][2]string{
		{specs.UninstallAnnotation, extensioncleanup.UninstallAnnotation},
		{specs.UninstallDeleteOperands, extensioncleanup.ModeDeleteOperands},
		{specs.UninstallOrphan, extensioncleanup.ModeOrphan},
	} {
		if c[0] != c[1] {
			t.Errorf("framework/specs says %q, pkg/extensioncleanup %q", c[0], c[1])
		}
	}
}
