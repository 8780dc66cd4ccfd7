package specs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
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
func enabledCaseCatchesMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	// The start's backstop plus the cases' 9 min: a start may queue for minutes behind the machine's
	// other starts (toolchain's start slots), which must not eat the cases' time.
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SuiteSetup)+intervals.Scaled(9*time.Minute))
	defer cancel()
	started := time.Now()
	registry, use := mutableWidget()
	env, err := testenv.Start(ctx, testenv.Config{Name: "mutants", Provider: "envtest", Log: testr.New(t),
		Registry: registry,
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
	// A binary of its own that exits at start, logging as a kubebuilder main does (an error, then a
	// stack trace): built before the case's clock starts.
	exitsAtStart := func(pkg string) func() error {
		return func() error {
			registry.RegisterBinary(widgetImage, localruntime.Binary{Package: pkg, Dir: "."})
			return registry.BuildBinaries(ctx, filepath.Join(t.TempDir(), "bin"), testr.New(t))
		}
	}
	specs.CheckMutants(ctx, t, enabled,
		specs.Mutant{Use: use("")},
		specs.Mutant{Name: string(widget.NeverReconciles), Use: use(widget.NeverReconciles),
			Want: []string{"operator should reconcile Widget", "has no " + widget.Finalizer + " finalizer yet"}, CaughtBy: specs.WaitReconciled},
		specs.Mutant{Name: string(widget.NeverFinalizes), Use: use(widget.NeverFinalizes),
			Want: []string{"the operator's finalizer should have cleaned up after Widget", "still exists",
				"the write that let it go: patch by system:serviceaccount:", ":widget-operator"}, CaughtBy: specs.WaitRemoved},
		specs.Mutant{Name: string(widget.LeaksAnObject), Use: use(widget.LeaksAnObject),
			Want: []string{"left behind by the installation", "leaked"}, CaughtBy: specs.WaitLeftovers},
		// The failure must say whose finalizer keeps the operands, not only that they are still there.
		specs.Mutant{Name: string(widget.KeepsItsFinalizer), Use: use(widget.KeepsItsFinalizer),
			Want:     []string{"operands that cleanup must remove", "kept by finalizer(s) [" + widget.Finalizer + "], which the spec did not add"},
			CaughtBy: specs.WaitRemoved},
		// A finalizer that fails: the failure quotes the operator's own error about each Widget left.
		specs.Mutant{Name: string(widget.CannotDeleteItsRecord), Use: use(widget.CannotDeleteItsRecord),
			Want: []string{"operands that cleanup must remove", "its operator's last error about it: ", "deleting record: configmaps",
				"is forbidden: its Role lacks delete on configmaps (mutant)"},
			CaughtBy: specs.WaitRemoved},
		// An operator that exits at start: the install stops at its third exit, quoting the error it
		// logged, not the stack frame its logger printed last, and well before the CSV wait's timeout (the
		// bound is a third of it: on a loaded 2-core machine the install before the exits alone took 30 s).
		specs.Mutant{Name: "exits-at-start-missing-file", Use: exitsAtStart("./testdata/exitsatstart/missingfile"),
			Want: []string{"crash-looping", "the last error it logged: ERROR setup to initialize metrics certificate watcher",
				"open /tmp/k8s-metrics-server/metrics-certs/tls.crt: no such file or directory"},
			CaughtBy: specs.WaitInstalled, Within: intervals.Get(intervals.CSVSucceeded) / 3},
		specs.Mutant{Name: "exits-at-start-missing-env", Use: exitsAtStart("./testdata/exitsatstart/missingenv"),
			Want:     []string{"crash-looping", "ERROR setup unable to start manager", "WIDGET_IMAGE is not set"},
			CaughtBy: specs.WaitInstalled, Within: intervals.Get(intervals.CSVSucceeded) / 3},
	)

	// The failed install left the operator's whole log (every run) among the case's artifacts (the
	// provider's logs, every operator's of the run: the one that crashed has its error in each run).
	t.Run("the-crash-is-in-the-artifacts", func(t *testing.T) {
		logs, _ := filepath.Glob(filepath.Join(artifacts.Dir(), "mutant_exits-at-start-missing-file_*", "provider", "operators", "*_widget-operator.log"))
		most := 0
		for _, l := range logs {
			fi, err := os.Stat(l)
			if err != nil || fi.ModTime().Before(started) {
				continue
			}
			data, _ := os.ReadFile(l)
			most = max(most, strings.Count(string(data), "to initialize metrics certificate watcher"))
		}
		if most < 3 {
			t.Errorf("no widget-operator log among the artifacts of the exits-at-start case under %s has its error from each of "+
				"its 3 or more runs (at most %d; logs: %v)", artifacts.Dir(), most, logs)
		}
	})

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

// widgetImage is the image widget-operator v0.1.0's CSV runs.
const widgetImage = "fixtures.local/widget-operator:v0.1.0"

// mutableWidget is a registry running widgetImage as widget-operator, and use(m), which makes the
// Deployments started from then on run mutant m ("" the real operator).
func mutableWidget() (*localruntime.Registry, func(widget.Mutant) func() error) {
	var mutant atomic.Value
	mutant.Store(widget.Mutant(""))
	// The CSV runs `/fixture-operator widget <flags>`; the mutant is read when the Deployment starts.
	operator := func(ctx context.Context, cfg *rest.Config, args []string, getenv func(string) string) error {
		if len(args) == 0 || args[0] != "widget" {
			return fmt.Errorf("want the widget subcommand first, got %q", args)
		}
		return widget.MainOf(mutant.Load().(widget.Mutant))(ctx, cfg, args[1:], getenv)
	}
	registry := localruntime.NewRegistry(map[string]localruntime.Entrypoint{widgetImage: operator})
	return registry, func(m widget.Mutant) func() error {
		return func() error { mutant.Store(m); registry.Register(widgetImage, operator); return nil }
	}
}
