package extensioncleanup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
	"github.com/cleanup-e2e/cleanup-e2e/internal/seeded"
	"github.com/cleanup-e2e/cleanup-e2e/internal/shrink"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

const foreignFinalizer = "example.cleanup-e2e.io/foreign"

// TestLifecycle runs a seeded operation list on one OLM v1 install, bounded: each round draws operations
// on the installed extension (Widgets created, the opt-in switched among none, delete-operands and
// orphan, a foreign finalizer on a Widget, restarts of the controller and of operator-controller,
// upgrades to the next widget-operator version, the last one dropping a CRD, a Widget namespace
// terminated), deletes the ClusterExtension (background or foreground, sometimes opting out in the
// middle, sometimes with an OLM v0 CSV claiming the Widget CRD until the uninstall says it is
// blocked), judges the uninstall against the invariants of pkg/extensioncleanup/doc.go, and installs
// again. A failure prints the list, the shortest failing list found (with CLEANUP_E2E_SHRINK re-runs)
// and how to replay both. internal/seeded's CLEANUP_E2E_STEPS counts rounds here.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	cfg, err := seeded.Read(seeded.Config{Sequences: 1, Steps: 2})
	if err != nil {
		t.Fatal(err)
	}
	for seed := range cfg.Seeds() {
		first, ops := generate(seed, cfg.Steps)
		f := runAndShrink(t, seed, first, keepSteps(ops, cfg.OnlySteps), variant{}, cfg.Shrink)
		f.replay = cfg.Replay(seed)
		if len(f.violations) > 0 {
			t.Fatal(f.report())
		}
	}
}

// TestLifecycleCatchesEarlyRelease: a deliberately broken controller that lets the operator go as soon
// as a pass has deleted the CRs, before they are finalized, is caught, and the shrinker drops operations
// the violation does not need (2 re-runs, each on a fresh install: the halves of the list).
func TestLifecycleCatchesEarlyRelease(t *testing.T) {
	t.Parallel()
	cfg, err := seeded.Read(seeded.Config{Seed: 1, Sequences: 1})
	if err != nil {
		t.Fatal(err)
	}
	first, ops := generateBroken(1)
	all := len(ops)
	ops = keepSteps(ops, cfg.OnlySteps)
	f := runAndShrink(t, 1, first, ops, variant{releaseEarly: true}, 2)
	if len(f.original) == 0 {
		t.Fatalf("the controller that releases before its CRs are finalized went unnoticed over:%s", formatOps(ops))
	}
	t.Logf("caught as expected:\n%s", f.report())
	if len(f.ops) >= all {
		t.Errorf("the shrinker kept all %d operations; want fewer (the first ones are noise):%s", len(ops), formatOps(f.ops))
	}
}

// TestLifecycleCatchesADeletionDuringAnUpgrade checks the checker: a Widget deleted during an upgrade
// is reported, naming the upgrade's step, while the Widgets a terminating namespace took are not.
func TestLifecycleCatchesADeletionDuringAnUpgrade(t *testing.T) {
	t.Parallel()
	ops := []lifecycleOp{{Step: 1, Kind: opNamespace, NS: "team-a"}, {Step: 2, Kind: opUpgrade}}
	v := runLifecycle(t, install{Mode: extensioncleanup.ModeDeleteOperands, Version: versions[0]}, ops, variant{plantDeletion: true})
	// The test's own client made the deletion: the audit log names it.
	by := "the request that deleted it: delete by " + toolchain.AdminUser
	if len(v) != 1 || !strings.Contains(v[0], "team-b/") || !strings.Contains(v[0], "seen during step 2 upgrade") || !strings.Contains(v[0], by) {
		t.Fatalf("want exactly the planted deletion of a team-b Widget, seen during step 2 upgrade, saying %q; got %d violation(s):\n  %s",
			by, len(v), strings.Join(v, "\n  "))
	}
	t.Logf("caught as expected: %s", v[0])
}

// failure is a run's violations and what shrinking made of them.
type failure struct {
	seed                 int64
	first                install
	all, ops             []lifecycleOp // the list run first, the shortest failing one found
	original, violations []string
	reruns               int
	test, replay         string // the test that replays it and its variables
}

// runAndShrink runs ops on a fresh install (a subtest: each run's control plane is stopped before the
// next) and, on violations, re-runs shrunk lists within budget.
func runAndShrink(t *testing.T, seed int64, first install, ops []lifecycleOp, vr variant, budget int) failure {
	f := failure{seed: seed, first: first, all: ops, ops: ops, test: strings.SplitN(t.Name(), "/", 2)[0]}
	run := func(cand []lifecycleOp) []string {
		var v []string
		t.Run(fmt.Sprintf("seed%d-%dops", seed, len(cand)), func(t *testing.T) {
			t.Logf("first install %s, operations:%s", first, formatOps(cand))
			v = runLifecycle(t, first, cand, vr)
			for _, s := range v {
				t.Logf("violation: %s", s)
			}
		})
		return v
	}
	f.original = run(ops)
	if len(f.original) == 0 || budget == 0 {
		f.violations = f.original
		return f
	}
	f.ops, f.violations = shrink.Chunks(ops, f.original, budget, func(c []lifecycleOp) []string {
		f.reruns++
		return run(c)
	})
	return f
}

func (f failure) report() string {
	prefix := ""
	if f.replay != "" {
		prefix = f.replay + " "
	}
	cmd := fmt.Sprintf("go test ./pkg/extensioncleanup -run '%s$' -v", f.test)
	// "seed N: K violations" and the "replay: " line frame the failure scripts/soak.sh extracts.
	s := fmt.Sprintf("seed %d: %d violations (first install %s):\n  %s\nthe %d operations:%s\nreplay: %s%s",
		f.seed, len(f.original), f.first, joinLines(f.original), len(f.all), formatOps(f.all), prefix, cmd)
	if f.reruns > 0 {
		s += fmt.Sprintf("\nshortest failing list found in %d re-runs (%d operations):%s\nits violations:\n  %s\nreplay it: %s%s=%s %s",
			f.reruns, len(f.ops), formatOps(f.ops), joinLines(f.violations), prefix, seeded.EnvOnlySteps, steps(f.ops), cmd)
	}
	return s
}

// keepSteps keeps the operations whose steps only names (nil keeps all).
func keepSteps(ops []lifecycleOp, only map[int]bool) []lifecycleOp {
	if only == nil {
		return ops
	}
	var out []lifecycleOp
	for _, o := range ops {
		if only[o.Step] {
			out = append(out, o)
		}
	}
	return out
}

// judgeUninstall follows the uninstall until the ClusterExtension is gone (removing the foreign
// finalizers once it had 2 s to show it waits for them) and checks invariant 4 at the moment it goes,
// then what each opt-in leaves behind.
func (e *env) judgeUninstall(ctx context.Context, t *testing.T, step int, mode string) []string {
	var v []string
	start := time.Now()
	foreignRemoved := false
	err := intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		if !e.ceGone(ctx) {
			hold := e.foreignHold
			if hold == 0 {
				hold = 2 * time.Second
			}
			if !foreignRemoved && time.Since(start) > hold {
				e.removeForeign(ctx, t)
				foreignRemoved = true
			}
			return false, e.describeCE(ctx)
		}
		if mode == extensioncleanup.ModeDeleteOperands {
			for _, w := range e.widgets {
				if l := live(ctx, t, e, w); l != nil {
					v = append(v, fmt.Sprintf("step %d: ClusterExtension released while Widget %s/%s is pending (finalizers %v)", step, w.GetNamespace(), w.GetName(), l.GetFinalizers()))
				}
			}
		}
		return true, ""
	}, intervals.Every(50*time.Millisecond))
	if err != nil {
		t.Fatalf("step %d: the ClusterExtension to go: %v", step, err)
	}
	e.removeForeign(ctx, t)
	e.waitSettled(ctx, t, start)
	// Invariant 6: whatever the order of the GC's strips, operator-controller's patches and the
	// controller's holds, every object of the extension goes (an orphan uninstall keeps the CRD).
	var left []string
	_ = intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		if mode == extensioncleanup.ModeOrphan {
			left = e.leftButCRD(ctx, t)
		} else {
			left = e.heldLeft(ctx, t)
		}
		return len(left) == 0, fmt.Sprint(left)
	})
	for _, l := range left {
		v = append(v, fmt.Sprintf("step %d: %s left after the uninstall, not being deleted", step, l))
	}
	switch mode {
	case extensioncleanup.ModeDeleteOperands:
		verdicts, err := olmv1.Judge(ctx, e.c, e.widgets, widget.Finalized)
		if err != nil {
			t.Fatal(err)
		}
		for _, vd := range verdicts {
			if vd.Verdict != olmv1.Finalized {
				v = append(v, fmt.Sprintf("step %d: Widget %s/%s %s after an ordered uninstall", step, vd.Namespace, vd.Name, vd.Verdict))
			}
		}
		e.widgets = nil
	case extensioncleanup.ModeOrphan:
		if crd := e.crd(ctx, t); crd == nil || crd.DeletionTimestamp != nil {
			v = append(v, fmt.Sprintf("step %d: CRD %s not kept by an orphan uninstall", step, widgetCRD))
		}
		for _, w := range e.widgets {
			if l := live(ctx, t, e, w); l == nil || l.GetDeletionTimestamp() != nil {
				v = append(v, fmt.Sprintf("step %d: Widget %s/%s deleted by an orphan uninstall", step, w.GetNamespace(), w.GetName()))
			}
		}
	default:
		e.widgets = nil // upstream's uninstall: not judged here (framework/olmv1 pins it)
	}
	return v
}

// waitArmed waits until the controller has acted on the opt-in mode.
func (e *env) waitArmed(ctx context.Context, t *testing.T, mode string) {
	t.Helper()
	if mode == "" {
		waitFor(ctx, t, "the opt-out released", func() (bool, string) { return noHold(ctx, e) })
		return
	}
	err := intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
		c := e.condition(ctx)
		return c != nil && c.Reason == extensioncleanup.ReasonHolding && len(c.Message) > len(mode) && c.Message[:len(mode)] == mode, fmt.Sprint(c)
	})
	if err != nil {
		t.Fatalf("armed for %q: %v", mode, err)
	}
}

func (e *env) describeCE(ctx context.Context) string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(extensioncleanup.ClusterExtensionGVK)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(e.ce), u); err != nil {
		return err.Error()
	}
	conds, _ := extensioncleanup.Conditions(u)
	return fmt.Sprintf("ClusterExtension still there: finalizers %v, annotations %v, conditions %s", u.GetFinalizers(), u.GetAnnotations(), olmv1.DescribeConditions(conds))
}

// optOutIfThere removes the opt-in annotation while the uninstall is not over (the ClusterExtension
// still carries Finalizer; the patch is guarded by resourceVersion) and reports whether it did.
func (e *env) optOutIfThere(ctx context.Context, t *testing.T) bool {
	for {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(extensioncleanup.ClusterExtensionGVK)
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(e.ce), u); err != nil {
			if client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
			return false
		}
		if !contains(u.GetFinalizers(), extensioncleanup.Finalizer) {
			return false
		}
		orig := u.DeepCopy()
		a := u.GetAnnotations()
		delete(a, extensioncleanup.UninstallAnnotation)
		u.SetAnnotations(a)
		err := e.c.Patch(ctx, u, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		switch {
		case err == nil:
			return true
		case apierrors.IsNotFound(err):
			return false
		case !apierrors.IsConflict(err):
			t.Fatal(err)
		}
	}
}

func (e *env) ceGone(ctx context.Context) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(extensioncleanup.ClusterExtensionGVK)
	return client.IgnoreNotFound(e.c.Get(ctx, client.ObjectKeyFromObject(e.ce), u)) == nil && u.GetName() == ""
}

func (e *env) removeForeign(ctx context.Context, t *testing.T) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(fixturesv1alpha1.GroupVersion.WithKind("WidgetList"))
	if err := e.c.List(ctx, l); err != nil {
		return // the CRD may be gone
	}
	for i := range l.Items {
		if w := &l.Items[i]; contains(w.GetFinalizers(), foreignFinalizer) {
			removeFinalizer(ctx, t, e, w, foreignFinalizer)
		}
	}
}

// reinstall creates the ClusterExtension again at version with mode and waits for the operator, then
// two Widgets.
func (e *env) reinstall(ctx context.Context, t *testing.T, mode, version string) {
	t.Helper()
	e.ce = olmv1.ClusterExtension(ceName, installNS, installer, "widget-operator", version)
	e.version = version
	if mode != "" {
		e.ce.SetAnnotations(map[string]string{extensioncleanup.UninstallAnnotation: mode})
	}
	if err := e.c.Create(ctx, e.ce); err != nil {
		t.Fatal(err)
	}
	if err := olmv1.WaitCondition(ctx, e.c, intervals.OLMInstall, e.ce, "Installed"); err != nil {
		t.Fatal(err)
	}
	if err := kube.WaitDeploymentAvailable(ctx, e.c, e.depKey, intervals.Get(intervals.DeploymentAvailable)); err != nil {
		t.Fatal(err)
	}
	// An uninstall without the opt-in (or opted out in the middle) leaves the CRD Terminating under
	// Widgets nobody finalizes: the new operator does, the CRD then goes and operator-controller makes it
	// again. Widgets can be created once it is served, as a user would find.
	waitForWithin(ctx, t, intervals.GarbageCollecting, "the widgets CRD served, not Terminating, after the reinstall", func() (bool, string) {
		crd := e.crd(ctx, t)
		switch {
		case crd == nil:
			return false, "CRD " + widgetCRD + " gone (operator-controller has not made it again yet)"
		case crd.DeletionTimestamp != nil:
			return false, "CRD " + widgetCRD + " Terminating (its Widgets not finalized yet)"
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, "CRD " + widgetCRD + " not Established yet"
	})
	var kept []*unstructured.Unstructured
	for _, w := range e.widgets { // kept by an orphan uninstall: reconciled again by the new operator
		if live(ctx, t, e, w) == nil {
			continue // lost: already reported by judgeUninstall
		}
		kept = append(kept, w)
		waitFor(ctx, t, "a kept Widget reconciled again", func() (bool, string) {
			l := live(ctx, t, e, w)
			if l == nil {
				return false, "gone"
			}
			err := widget.Reconciled(ctx, e.c, l)
			return err == nil, fmt.Sprint(err)
		})
	}
	e.widgets = kept
	for _, ns := range []string{"team-a", "team-b"} {
		e.widgets = append(e.widgets, e.createWidget(ctx, t, ns, fmt.Sprintf("r%d", time.Now().UnixNano()%100000)))
	}
	if mode != "" {
		e.waitArmed(ctx, t, mode)
	}
}

// live reads obj (nil when gone).
func live(ctx context.Context, t *testing.T, e *env, obj *unstructured.Unstructured) *unstructured.Unstructured {
	l := &unstructured.Unstructured{}
	l.SetGroupVersionKind(obj.GroupVersionKind())
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(obj), l); err != nil {
		if client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		return nil
	}
	return l
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func joinLines(v []string) string {
	out := ""
	for i, s := range v {
		if i > 0 {
			out += "\n  "
		}
		out += s
	}
	return out
}
