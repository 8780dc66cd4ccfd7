package specs_test

import (
	"context"
	"fmt"
	"strings"
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
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
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
	cases, err := specs.Cases(specs.OperandCleanupSpecInput{
		Environment: func() cluster.Environment { return env.Environment }, Name: "widget-mutant", BundleDir: bundle,
		InstallModes: []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace},
		Samples:      specs.MustALMExamples(bundle), Reconciled: widget.Reconciled, Finalized: widget.Finalized,
		LeftoverNamespaces: []string{widget.DefaultRecordsNamespace},
		// Each failing wait lasts this long; the real operator needs a few seconds.
		Timeout: 30 * time.Second, LeftoversTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	var enabled specs.Case
	for _, c := range cases {
		if strings.HasPrefix(c.Name, "removes the operands in the target namespaces") {
			enabled = c
		}
	}
	if enabled.Run == nil {
		t.Fatalf("no cleanup-enabled case among %d cases", len(cases))
	}

	for _, m := range []struct {
		mutant widget.Mutant
		want   []string // in the failure; none: the case must pass
	}{
		{mutant: ""},
		{mutant: widget.NeverReconciles, want: []string{"operator should reconcile Widget", "has no " + widget.Finalizer + " finalizer yet"}},
		{mutant: widget.NeverFinalizes, want: []string{"the operator's finalizer should have cleaned up after Widget", "still exists"}},
		{mutant: widget.LeaksAnObject, want: []string{"left behind by the installation", "leaked"}},
	} {
		name := string(m.mutant)
		if name == "" {
			name = "the-real-operator"
		}
		t.Run(name, func(t *testing.T) {
			mutant.Store(m.mutant)
			failure := specs.FailureOf(ctx, enabled, t.Logf)
			switch {
			case len(m.want) == 0 && failure != "":
				t.Fatalf("the case failed against the real operator: %s", failure)
			case len(m.want) > 0 && failure == "":
				t.Fatalf("the case passed against an operator that %s: it does not check what it claims to", m.mutant)
			}
			for _, w := range m.want {
				if !strings.Contains(failure, w) {
					t.Errorf("the failure does not name the defect (want %q):\n%s", w, failure)
				}
			}
		})
	}
}
