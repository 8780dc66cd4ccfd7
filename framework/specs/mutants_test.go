package specs_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

// Mutation checks: the cleanup-enabled case, run against widget-operator with one defect on purpose,
// must fail and say which defect — an operator that never reconciles (its samples are never taken
// in charge), never finalizes (its records stay), or leaks an object (the leftovers report names it)
// — and must pass against the real operator. A case that passed against a mutant would let a broken
// operator through every user's matrix.
func TestTheEnabledCaseCatchesAnOperatorThatDoesNotDoItsJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	// The start's backstop plus the cases' 8 min: a start may queue for minutes behind the machine's
	// other starts (toolchain's start slots), which must not eat the cases' time.
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SuiteSetup)+intervals.Scaled(8*time.Minute))
	defer cancel()
	var mutant atomic.Value
	mutant.Store(widget.Mutant(""))
	// The CSV runs `/fixture-operator widget <flags>`; the mutant is read when the Deployment starts.
	operator := func(ctx context.Context, cfg *rest.Config, args []string, getenv func(string) string) error {
		if len(args) == 0 || args[0] != "widget" {
			return fmt.Errorf("want the widget subcommand first, got %q", args)
		}
		return widget.MainOf(mutant.Load().(widget.Mutant))(ctx, cfg, args[1:], getenv)
	}
	env, err := testenv.Start(ctx, testenv.Input{Name: "mutants", Provider: "envtest", Log: testr.New(t),
		Registry: localruntime.NewRegistry(map[string]localruntime.Entrypoint{"fixtures.local/widget-operator:v0.1.0": operator}),
		Stack:    stack.ForOperandCleanup(),
		Schemes:  []func(*runtime.Scheme) error{fixturesv1alpha1.AddToScheme}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop(context.Background()) }()

	bundle := bundles.Dir("widget-operator", "v0.1.0")
	enabled, err := specs.EnabledCase(specs.OperandCleanupSpecInput{
		Environment: func() cluster.Environment { return env.Environment }, Name: "widget-mutant", BundleDir: bundle,
		InstallModes: []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace},
		Samples:      specs.MustALMExamples(bundle), Reconciled: widget.Reconciled, Finalized: widget.Finalized,
		LeftoverNamespaces: []string{widget.DefaultRecordsNamespace},
	}, operatorsv1alpha1.InstallModeTypeOwnNamespace)
	if err != nil {
		t.Fatal(err)
	}
	use := func(m widget.Mutant) func() error { return func() error { mutant.Store(m); return nil } }
	specs.CheckMutants(ctx, t, enabled,
		specs.Mutant{Use: use("")},
		specs.Mutant{Name: string(widget.NeverReconciles), Use: use(widget.NeverReconciles),
			Want: []string{"operator should reconcile Widget", "has no " + widget.Finalizer + " finalizer yet"}, CaughtBy: specs.WaitReconciled},
		specs.Mutant{Name: string(widget.NeverFinalizes), Use: use(widget.NeverFinalizes),
			Want: []string{"the operator's finalizer should have cleaned up after Widget", "still exists"}, CaughtBy: specs.WaitRemoved},
		specs.Mutant{Name: string(widget.LeaksAnObject), Use: use(widget.LeaksAnObject),
			Want: []string{"left behind by the installation", "leaked"}, CaughtBy: specs.WaitLeftovers},
		// The failure must say whose finalizer keeps the operands, not only that they are still there.
		specs.Mutant{Name: string(widget.KeepsItsFinalizer), Use: use(widget.KeepsItsFinalizer),
			Want:     []string{"operands that cleanup must remove", "kept by finalizer(s) [" + widget.Finalizer + "], which the spec did not add"},
			CaughtBy: specs.WaitRemoved},
	)

	// Each run left its cluster-scoped WidgetClass sample outside the OwnNamespace cleanup's scope, held
	// by the finalizer of an operator it then uninstalled; the case must release what it created, or
	// its CRD can never be deleted (a kind run's stack teardown failed on two such WidgetClasses).
	t.Run("no-sample-is-left-behind", func(t *testing.T) {
		var classes fixturesv1alpha1.WidgetClassList
		if err := env.Client.List(ctx, &classes); err != nil {
			t.Fatal(err)
		}
		for _, c := range classes.Items {
			t.Errorf("WidgetClass %s is left behind (finalizers %v) after the cases ended", c.Name, c.Finalizers)
		}
	})
}
