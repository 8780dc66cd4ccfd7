package extensioncleanup_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/auditlog"
	"github.com/cleanup-e2e/cleanup-e2e/framework/deletions"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// lifecycleRun executes an operation list on a fresh install and collects the violations of the
// invariants of doc.go it can see.
type lifecycleRun struct {
	t          *testing.T
	e          *env
	opts       extensioncleanup.Options
	mode       string // the opt-in in force
	installed  bool
	rec        *deletions.Recorder // every Widget deletion since the last install
	seen       int                 // deletions of rec already judged
	n          int                 // names of created Widgets
	taken      map[types.UID]bool  // Widgets a terminating namespace took
	byStep     map[int]lifecycleOp // a recorded deletion's step names its operation
	violations []string
	plant      bool // variant.plantDeletion
	stopped    bool // a violation left the install in a state the run cannot go on from
	crd        *crdHistory
	orphaned   *orphanedCRD // the CRD the last uninstall orphaned, until an install adopts it
}

// orphanedCRD is the CRD an orphan uninstall at step left: the user's from then on.
type orphanedCRD struct {
	step int
	uid  types.UID
}

// variant is a deliberately wrong run the checker must catch: a controller that releases early, or an
// upgrade that deletes a Widget as a controller acting during an upgrade would.
type variant struct{ releaseEarly, plantDeletion bool }

// runLifecycle installs the extension as first says on a fresh environment, runs ops and returns the
// violations, the controller and its checks as vr says.
func runLifecycle(t *testing.T, first install, ops []lifecycleOp, vr variant) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute+time.Duration(len(ops))*40*time.Second)
	defer cancel()
	opts := fast
	if vr.releaseEarly {
		opts = extensioncleanup.WithBrokenReleaseEarly(opts)
	}
	r := &lifecycleRun{t: t, opts: opts, mode: first.Mode, installed: true, taken: map[types.UID]bool{}, byStep: map[int]lifecycleOp{},
		plant: vr.plantDeletion}
	r.e = setupAt(ctx, t, first.Mode, first.Version, opts)
	if vr.releaseEarly {
		// The early release comes once a pass has deleted the CRs, which a loaded machine may delay past
		// the default hold: the foreign finalizer stays until the ClusterExtension is gone (or half the wait).
		r.e.foreignHold = intervals.Get(intervals.GarbageCollecting) / 2
	}
	r.record(ctx)
	hist, err := startCRDHistory(ctx, r.e.p.RESTConfig(), widgetCRD)
	if err != nil {
		t.Fatal(err)
	}
	defer hist.Stop()
	r.crd = hist
	for _, o := range ops {
		if r.stopped {
			return r.violations
		}
		r.byStep[o.Step] = o
		hist.Stamp(o.Step)
		if r.installed || r.orphaned != nil {
			r.rec.Stamp(o.Step)
		}
		start := time.Now()
		if r.do(ctx, o) {
			t.Logf("done: %s (opt-in %q, version %s) in %s", o, r.mode, r.e.version, time.Since(start).Round(time.Millisecond))
		} else {
			t.Logf("skipped: %s (its precondition does not hold)", o)
		}
	}
	if r.installed {
		r.checkNothingDeleted(ctx, "the end of the run")
		r.rec.Stop()
	}
	if r.orphaned != nil {
		r.waitOrphanReleased(ctx)
		r.checkOrphanKept(ctx, "the end of the run")
		r.rec.Stop()
	}
	return r.violations
}

func (r *lifecycleRun) violate(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

func (r *lifecycleRun) record(ctx context.Context) {
	rec, err := deletions.Start(ctx, r.e.p.RESTConfig(), fixturesv1alpha1.GroupVersion.WithResource("widgets"))
	if err != nil {
		r.t.Fatal(err)
	}
	r.rec, r.seen = rec, 0
}

// deletedBy names the request that deleted d (a "; …" suffix), from the API server's audit log.
func (r *lifecycleRun) deletedBy(d deletions.Deletion) string {
	log, err := r.e.p.AuditLog()
	if err != nil {
		return "; the audit log could not be read: " + err.Error()
	}
	obj := auditlog.Object{APIGroup: fixturesv1alpha1.GroupVersion.Group, Resource: "widgets", Namespace: d.Namespace, Name: d.Name}
	return "; " + auditlog.DeletedBy(log, obj, d.At.Add(time.Second)) // the recorder saw it after the request
}

// do performs o and says whether it ran (false: its precondition did not hold).
func (r *lifecycleRun) do(ctx context.Context, o lifecycleOp) bool {
	t, e := r.t, r.e
	switch o.Kind {
	case opInstall:
		if r.installed {
			return false
		}
		e.reinstall(ctx, t, o.Mode, o.Version)
		r.mode, r.installed = o.Mode, true
		if r.orphaned != nil { // adopted by this install, the same CRD
			r.checkOrphanKept(ctx, "the install at step "+fmt.Sprint(o.Step))
			r.rec.Stop()
			r.orphaned = nil
		}
		r.record(ctx)
		return true
	case opRestart:
		e.stop()
		e.start(ctx, t, r.opts)
		return true
	}
	if !r.installed {
		return false
	}
	switch o.Kind {
	case opWidget:
		r.n++
		e.widgets = append(e.widgets, e.createWidget(ctx, t, o.NS, fmt.Sprintf("x%d", r.n)))
	case opMode:
		// From no opt-in any delete is refused (no finalizer yet); from the other mode a foreground one
		// (the holds are the other mode's).
		if policy := unarmedPolicy(r.mode, o.Mode); o.Unarmed && policy != "" {
			e.stop()
			setAnnotation(ctx, t, e, o.Mode)
			if err := e.deleteUnarmed(ctx, policy); err != nil {
				r.violate("step %d: %v", o.Step, err)
				r.stopped = true // the install's state is no longer what the operations assume
				return true
			}
			t.Logf("step %d: the %s delete of the opted-in ClusterExtension the stopped controller had not armed for %q was refused", o.Step, policy, o.Mode)
			e.start(ctx, t, r.opts)
		} else {
			setAnnotation(ctx, t, e, o.Mode)
		}
		e.waitArmed(ctx, t, o.Mode)
		r.mode = o.Mode
	case opForeign:
		if len(e.widgets) == 0 {
			return false
		}
		if !addFinalizer(ctx, t, e, e.widgets[o.Index%len(e.widgets)], foreignFinalizer) {
			return false // gone or being deleted
		}
	case opUpgrade:
		to := e.next()
		if to == "" {
			return false
		}
		e.upgrade(ctx, t, to)
		if r.plant {
			r.plantDeletion(ctx, "team-b")
		}
		// An upgrade is no uninstall: the controller holds the upgraded objects again (Holding).
		for _, v := range e.holdViolations(ctx, r.mode, "the upgrade to "+to) {
			r.violate("%s", v)
		}
	case opRestartOC:
		e.restartOperatorController(ctx, t)
		// Its first reconciles patch the release's objects again (helm-operator-plugins' Reconcile): the
		// hold must survive them.
		time.Sleep(2 * time.Second)
		for _, v := range e.holdViolations(ctx, r.mode, "an operator-controller restart") {
			r.violate("%s", v)
		}
	case opNamespace:
		for uid := range e.terminateNamespace(ctx, t, o.NS) {
			r.taken[uid] = true
		}
	case opUninstall:
		r.uninstall(ctx, o)
	default:
		t.Fatalf("unknown operation %s", o)
	}
	return true
}

// checkNothingDeleted: invariant 2, no Widget deleted while the ClusterExtension is installed (but those
// of a terminating namespace, the namespace controller's). A barrier Widget orders the record with now.
func (r *lifecycleRun) checkNothingDeleted(ctx context.Context, when string) {
	r.n++
	barrier := r.e.createWidget(ctx, r.t, "team-b", fmt.Sprintf("barrier%d", r.n))
	r.e.widgets = append(r.e.widgets, barrier)
	if err := r.rec.Barrier(ctx, "team-b", barrier.GetName(), 0); err != nil {
		r.t.Fatal(err)
	}
	all := r.rec.Since(0)
	for _, d := range all[r.seen:] {
		if !r.taken[d.UID] {
			during := "the install"
			if o, ok := r.byStep[d.Step]; ok {
				during = "step " + o.String()
			}
			r.violate("Widget %s deleted while its ClusterExtension was installed: seen during %s, before %s (finalizers %v)%s", d, during, when, d.Finalizers, r.deletedBy(d))
		}
	}
	r.seen = len(all)
}

// uninstall deletes the ClusterExtension and judges the uninstall (judgeUninstall).
func (r *lifecycleRun) uninstall(ctx context.Context, o lifecycleOp) {
	t, e := r.t, r.e
	r.checkNothingDeleted(ctx, "the deletion of the ClusterExtension")
	var csv *unstructured.Unstructured
	if o.Legacy {
		csv = e.legacyCSVClaiming(ctx, t, widgetCRD, fmt.Sprintf("widget-operator.v0.0.%d", o.Step))
	}
	e.deleteCE(ctx, t, o.Policy)
	t.Logf("ClusterExtension deleted (%s), opt-in %q", o.Policy, r.mode)
	if o.OptOut && r.mode != "" {
		time.Sleep(200 * time.Millisecond)
		if e.optOutIfThere(ctx, t) { // an orphan uninstall is often over by now
			r.mode = ""
			t.Logf("opted out in the middle of the uninstall")
		}
	}
	if csv != nil {
		if r.mode == extensioncleanup.ModeDeleteOperands {
			r.checkBlocked(ctx, o)
		}
		if err := e.c.Delete(ctx, csv); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range e.judgeUninstall(ctx, t, o.Step, r.mode) {
		if strings.Contains(v, "CRD "+widgetCRD) {
			v += "; its last changes:" + r.crd.Last(6)
		}
		r.violate("%s", v)
	}
	r.installed = false
	if crd := e.crd(ctx, t); r.mode == extensioncleanup.ModeOrphan && crd != nil && crd.DeletionTimestamp == nil {
		// The user's from now on: its Widgets stay recorded until an install adopts it or the run ends.
		r.orphaned, r.seen = &orphanedCRD{step: o.Step, uid: crd.UID}, len(r.rec.Since(0))
		return
	}
	r.rec.Stop()
}

// checkBlocked: invariant 4, an OLM v0 CSV claiming the Widget CRD blocks a delete-operands uninstall
// (CleanupBlocked): the operator is not let go, and no Widget is deleted meanwhile.
func (r *lifecycleRun) checkBlocked(ctx context.Context, o lifecycleOp) {
	c, err := r.e.waitBlockedByTheClaim(ctx)
	if err != nil {
		r.t.Fatalf("step %s: condition %s naming the CSV: %v", o, extensioncleanup.ReasonBlocked, err)
	}
	if c == nil || !blockedByTheClaim(c) {
		r.violate("step %s: the uninstall went on while an OLM v0 CSV claims the Widget CRD (the GC then deletes every Widget): condition %v", o, c)
		return
	}
	r.checkNothingDeleted(ctx, fmt.Sprintf("the end of step %d's block by an OLM v0 claim", o.Step))
}

// checkOrphanKept: invariant 7. The CRD an orphan uninstall left is the very one (UID) still there,
// not being deleted, and none of its Widgets was deleted since (but by a terminating namespace), however
// late operator-controller writes for the gone ClusterExtension.
func (r *lifecycleRun) checkOrphanKept(ctx context.Context, when string) {
	crd := r.e.crd(ctx, r.t)
	switch {
	case crd == nil:
		r.violate("CRD %s orphaned at step %d (uid %s) gone by %s; its last changes:%s", widgetCRD, r.orphaned.step, r.orphaned.uid, when, r.crd.Last(6))
	case crd.UID != r.orphaned.uid:
		r.violate("CRD %s orphaned at step %d (uid %s) replaced by uid %s by %s: the orphaned one was deleted; its last changes:%s", widgetCRD, r.orphaned.step, r.orphaned.uid, crd.UID, when, r.crd.Last(6))
	case crd.DeletionTimestamp != nil:
		r.violate("CRD %s orphaned at step %d being deleted by %s; its last changes:%s", widgetCRD, r.orphaned.step, when, r.crd.Last(6))
	}
	for _, d := range r.rec.Since(r.seen) {
		if !r.taken[d.UID] {
			r.violate("Widget %s deleted after the orphan uninstall at step %d, seen during step %d, before %s%s", d, r.orphaned.step, d.Step, when, r.deletedBy(d))
		}
	}
}

// waitOrphanReleased waits until the orphaned CRD carries no holder's reference (the orphan release drops
// it), then a moment more: a late operator-controller write for the gone ClusterExtension lands within
// it, and the garbage collector acts on it within milliseconds.
func (r *lifecycleRun) waitOrphanReleased(ctx context.Context) {
	err := intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		crd := r.e.crd(ctx, r.t)
		if crd == nil {
			return true, ""
		}
		for _, ref := range crd.OwnerReferences {
			if ref.Kind == "ClusterRole" {
				return false, fmt.Sprintf("CRD %s still held: owners %v", widgetCRD, describeRefs(crd.OwnerReferences))
			}
		}
		return true, ""
	})
	if err != nil {
		r.violate("the orphaned CRD's holder references never went: %v", err)
	}
	time.Sleep(3 * time.Second)
}

// plantDeletion deletes the first live Widget in ns (its operator finalizes it).
func (r *lifecycleRun) plantDeletion(ctx context.Context, ns string) {
	for _, w := range r.e.widgets {
		if w.GetNamespace() != ns || live(ctx, r.t, r.e, w) == nil {
			continue
		}
		if err := r.e.c.Delete(ctx, w); err != nil {
			r.t.Fatal(err)
		}
		r.t.Logf("planted: Widget %s/%s deleted during the upgrade", ns, w.GetName())
		return
	}
	r.t.Fatalf("no live Widget in %s to delete", ns)
}

// unarmedPolicy is the delete the unarmed guard must refuse once the opt-in went from mode from to to
// and the controller has not acted on it: any from no opt-in, a foreground one from the other mode, none
// to no opt-in or to the same mode.
func unarmedPolicy(from, to string) metav1.DeletionPropagation {
	switch {
	case to == "" || to == from:
		return ""
	case from == "":
		return metav1.DeletePropagationBackground
	default:
		return metav1.DeletePropagationForeground
	}
}
