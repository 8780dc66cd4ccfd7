package extensioncleanup_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/deletions"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// The lifecycle test's own variables: replay a seed, run more rounds (a soak).
const (
	envLifecycleSeed   = "CLEANUP_E2E_EXT_LIFECYCLE_SEED"
	envLifecycleRounds = "CLEANUP_E2E_EXT_LIFECYCLE_ROUNDS"
	foreignFinalizer   = "example.cleanup-e2e.io/foreign"
)

// TestLifecycle runs a seeded sequence on one OLM v1 install, bounded: each round draws operations on
// the installed extension (Widgets created, the opt-in switched among none, delete-operands and orphan,
// a foreign finalizer on a Widget, controller restarts), deletes the ClusterExtension (background or
// foreground, sometimes opting out in the middle), judges the uninstall against the invariants of
// pkg/extensioncleanup/doc.go, and installs again. A failure prints the seed that replays it.
func TestLifecycle(t *testing.T) {
	seed := envInt(envLifecycleSeed, time.Now().UnixNano()%1_000_000)
	rounds := envInt(envLifecycleRounds, 2)
	if v := lifecycle(t, seed, int(rounds), false); len(v) > 0 {
		t.Errorf("seed %d: %d violations:\n  %s\nreplay: %s=%d go test ./pkg/extensioncleanup -run TestLifecycle$ -v",
			seed, len(v), joinLines(v), envLifecycleSeed, seed)
	}
}

// TestLifecycleCatchesEarlyRelease: a deliberately broken controller that lets the operator go as soon
// as a pass has deleted the CRs, before they are finalized, is caught.
func TestLifecycleCatchesEarlyRelease(t *testing.T) {
	extensioncleanup.BreakReleaseEarly(true)
	defer extensioncleanup.BreakReleaseEarly(false)
	v := lifecycle(t, 1, 1, true)
	if len(v) == 0 {
		t.Fatal("the controller that releases before its CRs are finalized went unnoticed")
	}
	t.Logf("caught as expected:\n  %s", joinLines(v))
}

// lifecycle runs rounds and returns the violations. broken forces the round that catches an early
// release: delete-operands, a Widget with a foreign finalizer, background deletion, no opt-out.
func lifecycle(t *testing.T, seed int64, rounds int, broken bool) []string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds)*3*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewSource(seed))
	modes := []string{"", extensioncleanup.ModeDeleteOperands, extensioncleanup.ModeOrphan}
	mode := modes[rng.Intn(len(modes))]
	if broken {
		mode = extensioncleanup.ModeDeleteOperands
	}
	opts := fast
	opts.OrphanGrace = 2 * time.Second
	e := setup(ctx, t, mode, opts)
	if broken {
		// The early release comes once a pass has deleted the CRs, which a loaded machine may delay past
		// the default hold: the foreign finalizer stays until the ClusterExtension is gone (or half the wait).
		e.foreignHold = intervals.Get(intervals.GarbageCollecting) / 2
	}
	var violations []string
	n := 0
	for round := 0; round < rounds; round++ {
		// Every Widget deletion the API server reports, whoever made it; one recorder per install (its
		// watch ends when an uninstall deletes the CRD).
		rec, err := deletions.Start(ctx, e.p.RESTConfig(), fixturesv1alpha1.GroupVersion.WithResource("widgets"))
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for i := 0; i < 3 && !broken; i++ {
			switch rng.Intn(4) {
			case 0:
				n++
				e.widgets = append(e.widgets, e.createWidget(ctx, t, []string{"team-a", "team-b"}[rng.Intn(2)], fmt.Sprintf("x%d", n)))
				t.Logf("round %d: Widget x%d created", round, n)
			case 1:
				mode = modes[rng.Intn(len(modes))]
				setAnnotation(ctx, t, e, mode)
				e.waitArmed(ctx, t, mode)
				t.Logf("round %d: opt-in %q", round, mode)
			case 2:
				e.stop()
				e.start(ctx, t, opts)
				t.Logf("round %d: controller restarted", round)
			case 3:
				w := e.widgets[rng.Intn(len(e.widgets))]
				setFinalizers(ctx, t, e, w, append(live(ctx, t, e, w).GetFinalizers(), foreignFinalizer))
				t.Logf("round %d: foreign finalizer on Widget %s/%s", round, w.GetNamespace(), w.GetName())
			}
		}
		if broken {
			w := e.widgets[0]
			setFinalizers(ctx, t, e, w, append(live(ctx, t, e, w).GetFinalizers(), foreignFinalizer))
		}
		// Invariant 2: nothing was deleted while the ClusterExtension was installed (a barrier Widget
		// orders the record with this step).
		n++
		barrier := e.createWidget(ctx, t, "team-b", fmt.Sprintf("barrier%d", n))
		e.widgets = append(e.widgets, barrier)
		if err := rec.Barrier(ctx, "team-b", barrier.GetName(), 0); err != nil {
			t.Fatal(err)
		}
		for _, d := range rec.Since(seen) {
			violations = append(violations, fmt.Sprintf("round %d: Widget %s deleted while its ClusterExtension was installed (finalizers %v)", round, d, d.Finalizers))
		}
		policy := []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground}[rng.Intn(2)]
		if broken || mode == extensioncleanup.ModeOrphan {
			// orphan with foreground deletion is not guaranteed (docs/olm-v1.md): the GC strips the
			// ClusterExtension's reference and operator-controller's next reconcile can hand the CRD back.
			policy = metav1.DeletePropagationBackground
		}
		e.deleteCE(ctx, t, policy)
		if !broken && mode != "" && rng.Intn(4) == 0 {
			time.Sleep(200 * time.Millisecond)
			if e.optOutIfThere(ctx, t) { // an orphan uninstall is often over by now
				mode = ""
				t.Logf("round %d: opted out in the middle of the uninstall", round)
			}
		}
		t.Logf("round %d: ClusterExtension deleted (%s), opt-in %q", round, policy, mode)
		violations = append(violations, e.judgeUninstall(ctx, t, round, mode)...)
		rec.Stop()
		if round < rounds-1 {
			mode = modes[rng.Intn(len(modes))]
			e.reinstall(ctx, t, mode)
			t.Logf("round %d: installed again, opt-in %q", round, mode)
		}
	}
	return violations
}

// judgeUninstall follows the uninstall until the ClusterExtension is gone (removing the foreign
// finalizers once it had 2 s to show it waits for them) and checks invariant 4 at the moment it goes,
// then what each opt-in leaves behind.
func (e *env) judgeUninstall(ctx context.Context, t *testing.T, round int, mode string) []string {
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
					v = append(v, fmt.Sprintf("round %d: ClusterExtension released while Widget %s/%s is pending (finalizers %v)", round, w.GetNamespace(), w.GetName(), l.GetFinalizers()))
				}
			}
		}
		return true, ""
	}, intervals.Every(50*time.Millisecond))
	if err != nil {
		t.Fatalf("round %d: the ClusterExtension to go: %v", round, err)
	}
	e.removeForeign(ctx, t)
	e.waitSettled(ctx, t, start)
	switch mode {
	case extensioncleanup.ModeDeleteOperands:
		verdicts, err := olmv1.Judge(ctx, e.c, e.widgets, widget.Finalized)
		if err != nil {
			t.Fatal(err)
		}
		for _, vd := range verdicts {
			if vd.Verdict != olmv1.Finalized {
				v = append(v, fmt.Sprintf("round %d: Widget %s/%s %s after an ordered uninstall", round, vd.Namespace, vd.Name, vd.Verdict))
			}
		}
		e.widgets = nil
	case extensioncleanup.ModeOrphan:
		if crd := e.crd(ctx, t); crd == nil || crd.DeletionTimestamp != nil {
			v = append(v, fmt.Sprintf("round %d: CRD %s not kept by an orphan uninstall", round, widgetCRD))
		}
		for _, w := range e.widgets {
			if l := live(ctx, t, e, w); l == nil || l.GetDeletionTimestamp() != nil {
				v = append(v, fmt.Sprintf("round %d: Widget %s/%s deleted by an orphan uninstall", round, w.GetNamespace(), w.GetName()))
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

// optOutIfThere removes the opt-in annotation if the ClusterExtension is still there.
func (e *env) optOutIfThere(ctx context.Context, t *testing.T) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(extensioncleanup.ClusterExtensionGVK)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(e.ce), u); err != nil {
		if client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		return false
	}
	orig := u.DeepCopy()
	a := u.GetAnnotations()
	delete(a, extensioncleanup.UninstallAnnotation)
	u.SetAnnotations(a)
	if err := e.c.Patch(ctx, u, client.MergeFrom(orig)); err != nil {
		if client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		return false
	}
	return true
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
			setFinalizers(ctx, t, e, w, without(w.GetFinalizers(), foreignFinalizer))
		}
	}
}

// reinstall creates the ClusterExtension again with mode and waits for the operator, then two Widgets.
func (e *env) reinstall(ctx context.Context, t *testing.T, mode string) {
	t.Helper()
	e.ce = olmv1.ClusterExtension(ceName, installNS, installer, "widget-operator", "0.1.0")
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

func envInt(name string, def int64) int64 {
	if n, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil {
		return n
	}
	return def
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
