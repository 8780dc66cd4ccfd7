package specs_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/gizmo"
	stackfixture "github.com/cleanup-e2e/cleanup-e2e/fixtures/stack"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/bundle"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/leftovers"
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
func olmv1Cases(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and OLM v1")
	}
	if _, err := olmv1.OperatorController.Path(); err != nil {
		t.Skipf("OLM v1 not built (make tools): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SuiteSetup)+intervals.Scaled(12*time.Minute))
	defer cancel()
	registry, use := mutableWidget()
	for image, ep := range fixtures.Images() { // gizmo-operator's
		if !registry.Registered(image) {
			registry.Register(image, ep)
		}
	}
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
	t.Run("mutants", func(t *testing.T) { checkMutantsUnderOLMv1(ctx, t, in, use) })
	t.Run("gizmo-operator", func(t *testing.T) { gizmoUnderOLMv1(ctx, t, env.Environment) })
	t.Run("stack-operator", func(t *testing.T) { stackUnderOLMv1(ctx, t, env.Environment) })
}

// stack-operator's finalizer deletes the Stack's children, CRs of another kind it owns, each held by a
// finalizer of its own: under OLM v1 the garbage collector deletes both CRDs with the operator, and an
// ordered uninstall deletes both kinds while the operator deletes the children too.
func stackUnderOLMv1(ctx context.Context, t *testing.T, env cluster.Environment) {
	in := specs.OperandCleanupSpecInput{
		Environment: func() cluster.Environment { return env }, Name: "stack-v1", BundleDir: bundles.Dir("stack-operator", "v0.1.0"),
		Samples: stackfixture.Samples, Reconciled: stackfixture.Reconciled,
	}
	cases, err := specs.OLMv1Cases(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { c.Run(ctx, specs.FromTesting(t)) })
	}
}

// gizmo-operator owns Gizmos and makes a Widget, an API it requires and does not own, for each: OLM v1
// resolves no dependencies, so the Widget CRDs are there first (applied, as a user installs the
// provider first); no case may delete a Widget, and the Widgets it made stay behind on purpose.
func gizmoUnderOLMv1(ctx context.Context, t *testing.T, env cluster.Environment) {
	widgets, err := bundle.Load(bundles.Dir("widget-operator", "v0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	// As published (its CSV requires the Widget API), OLM v1 v1.2.0 refuses it: the first case must fail
	// at the install, saying why. The variant without the requirement is how a team ports it.
	gizmoBundle := specs.MustWithoutRequiredAPIs(bundles.Dir("gizmo-operator", "v0.1.0"))
	in := specs.OperandCleanupSpecInput{
		Environment: func() cluster.Environment { return env }, Name: "gizmo-v1", BundleDir: gizmoBundle,
		Samples: gizmo.Samples, Reconciled: gizmo.Reconciled,
		// OLM v1 installs no dependency: the Widget API gizmo-operator requires is there first.
		BeforeInstall: func(ctx context.Context, c client.Client) error {
			for _, crd := range widgets.CRDs { // the one CRD it requires: its spec holds that API only
				if crd.Name == "widgets.fixtures.cleanup-e2e.io" {
					return kube.ApplyCRDs(ctx, c, crd)
				}
			}
			return nil
		},
		ExpectedLeftovers: []leftovers.Matcher{{Kind: "Widget", Name: gizmo.WidgetName("*"),
			Reason: "gizmo-operator leaves the Widget it made: Widget is an API it requires, not one it owns"}},
	}
	published := in
	published.BundleDir = bundles.Dir("gizmo-operator", "v0.1.0")
	refused, err := specs.OLMv1CRsFirstCase(published)
	if err != nil {
		t.Fatal(err)
	}
	specs.CheckMutants(ctx, t, refused, specs.Mutant{Name: "requires-an-api", Use: func() error { return nil },
		Want:     []string{"should install gizmo-operator", "refuses the bundle", `dependency declared via property "olm.gvk.required"`},
		CaughtBy: specs.WaitInstalled, Within: intervals.Scaled(10 * time.Second)})

	cases, err := specs.OLMv1Cases(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { c.Run(ctx, specs.FromTesting(t)) })
	}
}

// checkMutantsUnderOLMv1: the CRs-first case fails against each mutant of widget-operator, naming its
// defect in the wait that must catch it, as under OLM v0.
func checkMutantsUnderOLMv1(ctx context.Context, t *testing.T, in specs.OperandCleanupSpecInput, use func(widget.Mutant) func() error) {
	crsFirst, err := specs.OLMv1CRsFirstCase(in)
	if err != nil {
		t.Fatal(err)
	}
	specs.CheckMutants(ctx, t, crsFirst,
		specs.Mutant{Name: string(widget.NeverReconciles), Use: use(widget.NeverReconciles),
			Want: []string{"operator should reconcile Widget", "has no " + widget.Finalizer + " finalizer yet"}, CaughtBy: specs.WaitReconciled},
		specs.Mutant{Name: string(widget.NeverFinalizes), Use: use(widget.NeverFinalizes),
			Want: []string{"the operator's finalizer should have cleaned up after Widget", "still exists",
				"the write that let it go: patch by system:serviceaccount:", ":widget-operator"}, CaughtBy: specs.WaitRemoved},
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
