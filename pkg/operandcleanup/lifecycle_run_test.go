package operandcleanup

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/deletions"
)

// lifecycleKind is the operand type of the randomized lifecycle test, owned by no other spec's CSV, so
// that nothing else in the suite serves it (invariant 3 stays out of the way) and nothing else deletes it.
var lifecycleKind = testKind{"gears", "Gear", true}

// olmFinalizer is OLM's own CSV finalizer (v0.27+), removed by the simulated OLM (opOLM).
const olmFinalizer = "operators.coreos.com/csv-cleanup"

// startRecorder records every Gear deletion in the cluster (framework/deletions).
func startRecorder() *deletions.Recorder {
	gvr := schema.GroupVersionResource{Group: testGroup, Version: testVersion, Resource: lifecycleKind.Plural}
	rec, err := deletions.Start(ctx, tenv.cfg, gvr)
	Expect(err).NotTo(HaveOccurred())
	return rec
}

// lifecycleRun applies one sequence to the cluster and checks the invariants.
type lifecycleRun struct {
	seed       int64
	mode       string
	ns         map[string]string // symbolic -> real namespace ("sentinel" holds the barriers)
	model      *lifecycleModel
	rec        *deletions.Recorder
	states     []modelState // in the order they began; [0] before the first operation
	final      int          // the step number of the final uninstall (after the sequence's operations)
	userDelete map[types.UID]bool
	// aborts: when the user disabled the cleanup of a CSV being deleted, releasing the operator at once
	// (invariant 7 lets an abort leave CRs already being deleted to the user).
	aborts     []time.Time
	checked    int
	violations []string
	// settle: after each operation, wait until the controller has acted on it, so that it
	// is judged in every state the sequence passes through, not only in those it happens to catch
	// (lifecycle_settle_test.go).
	settle  bool
	probe   types.NamespacedName
	probeOn bool
}

func newLifecycleRun(seed int64, mode string, settle bool) *lifecycleRun {
	r := &lifecycleRun{seed: seed, mode: mode, ns: map[string]string{}, model: newModel(installModes[mode]), userDelete: map[types.UID]bool{}, settle: settle}
	for _, sym := range []string{"op", "t1", "t2", "out", "op2", "sentinel"} {
		r.ns[sym] = newNamespace("lc-" + sym)
	}
	r.states = []modelState{{since: time.Now(), permits: map[string]bool{}, csvs: "(nothing installed)"}}
	return r
}

// modelState is the model between two changes: from since on, where it permits a cleanup and its CSVs
// (for messages).
type modelState struct {
	since   time.Time
	permits map[string]bool
	csvs    string
}

// record starts a new state of the model, now.
func (r *lifecycleRun) record() {
	r.states = append(r.states, modelState{since: time.Now(), permits: r.model.permitted(), csvs: r.describeModel()})
}

// apply advances the model by o and, when it applies, performs it. The state it makes begins before the
// first write: the controller may act on it at once, long before the next barrier.
func (r *lifecycleRun) apply(o lifecycleOp) {
	watched := joinSyms(r.model.watched)
	if r.model.apply(o) {
		r.record()
		r.do(o)
		if joinSyms(r.model.watched) != watched {
			r.syncDeployment()
		}
	}
}

// run applies ops, then uninstalls what is left; it returns the violations found.
func (r *lifecycleRun) run(ops []lifecycleOp) []string {
	setExtensionClaim(false) // in case an earlier run stopped before its tidy
	r.rec = startRecorder()
	defer r.rec.Stop()
	if r.settle {
		r.startSettling()
		defer r.stopSettling()
	}
	r.final = len(ops) + 1
	for i, o := range ops {
		r.rec.Stamp(i + 1)
		r.apply(o)
		if r.settle {
			r.settleAfter(fmt.Sprintf("step %d (%s)", i+1, o))
		}
		r.barrier(i + 1)
		r.checkDeletions(ops)
	}
	r.checkOptIn()
	r.checkStatus()
	r.uninstallAll()
	r.barrier(r.final)
	r.checkDeletions(ops)
	return r.violations
}

func (r *lifecycleRun) violate(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// barrier waits until the recorder has seen everything up to now, then records the model's state, less
// the CSVs the API server no longer has (a CSV that went counts as there until this barrier).
func (r *lifecycleRun) barrier(step int) {
	name := fmt.Sprintf("sentinel-%d-%d", step, len(r.states))
	Expect(tenv.admin.Create(ctx, newOperand(lifecycleKind, r.ns["sentinel"], name))).To(Succeed())
	Expect(r.rec.Barrier(ctx, r.ns["sentinel"], name, 30*time.Second)).To(Succeed())
	live := map[string]bool{}
	for _, c := range r.liveCSVs() {
		live[c.Name] = true
	}
	watched := joinSyms(r.model.watched)
	r.model.observe(live)
	if joinSyms(r.model.watched) != watched {
		r.syncDeployment()
	}
	r.record()
}

func (r *lifecycleRun) describeModel() string {
	var parts []string
	for _, n := range r.model.present() {
		c := r.model.csvs[n]
		s := fmt.Sprintf("%s{phase=%s enabled=%t", n, c.phase, c.enabled)
		if c.replaces != "" {
			s += " replaces=" + c.replaces
		}
		if c.deleting {
			s += " deleting"
		}
		parts = append(parts, s+"}")
	}
	if len(parts) == 0 {
		return "(no CSV)"
	}
	return strings.Join(parts, " ")
}

// passGrace bounds how long a cleanup pass may keep deleting after the live re-verification that allowed
// it: a pass deletes what it listed, DeleteConcurrency at a time, so on a loaded machine its last delete
// can land a moment after the user's next operations (e.g. an abort).
const passGrace = 2 * time.Second

// checkDeletions judges every deletion recorded since the last check (invariants 1-3): it is allowed when
// the model permitted a cleanup in its namespace in some state that lasted until at least passGrace
// before the deletion was seen. Sentinels (barriers) are not operands.
func (r *lifecycleRun) checkDeletions(ops []lifecycleOp) {
	sym := map[string]string{}
	for k, v := range r.ns {
		sym[v] = k
	}
	for _, d := range r.rec.Since(r.checked) {
		r.checked++
		s, ours := sym[d.Namespace]
		if r.userDelete[d.UID] || strings.HasPrefix(d.Name, "sentinel-") {
			continue
		}
		ok, current := false, r.states[0]
		for j, st := range r.states {
			ended := j+1 < len(r.states) && r.states[j+1].since.Before(d.At.Add(-passGrace))
			if st.since.After(d.At) {
				continue
			}
			current = st
			if !ended && (st.permits["*"] || (ours && st.permits[s])) {
				ok = true
			}
		}
		if !ok {
			what := "step " + fmt.Sprint(d.Step)
			if d.Step >= 1 && d.Step <= len(ops) {
				what += " (" + ops[d.Step-1].String() + ")"
			} else if d.Step > len(ops) {
				what = "the final uninstall"
			}
			r.violate("during %s Gear %s (namespace %q) was deleted, but no CSV permitted a cleanup there; CSVs: %s",
				what, d, s, current.csvs)
		}
	}
}

// checkOptIn: the live spec.cleanup.enabled of every CSV is the user's choice (invariant 4).
func (r *lifecycleRun) checkOptIn() {
	for _, c := range r.liveCSVs() {
		if m := r.model.csvs[c.Name]; m != nil && c.Spec.Cleanup.Enabled != m.enabled {
			r.violate("opt-in changed: %s has spec.cleanup.enabled=%t, the user's choice is %t", c.Name, c.Spec.Cleanup.Enabled, m.enabled)
		}
	}
}

// checkStatus: a CSV held for cleanup says so in its status (invariant 5).
func (r *lifecycleRun) checkStatus() {
	for _, c := range r.liveCSVs() {
		if !isDeleting(&c) || !hasFinalizer(&c) {
			continue
		}
		key := keyOf(&c)
		explained := func() bool {
			cur := getCSV(key)
			return cur == nil || !hasFinalizer(cur) || cur.Status.Phase == PhaseCleanup || cur.Status.Phase == PhaseCleanupOver
		}
		if !r.within(10*time.Second, explained) {
			cur := getCSV(key)
			r.violate("%s is held for cleanup but its status does not say so: phase %q reason %q message %q", c.Name, cur.Status.Phase, cur.Status.Reason, cur.Status.Message)
		}
	}
}

// uninstallAll ends the sequence as a user would: the head gets cleanup enabled, every CSV is deleted
// (oldest first), OLM and the operator do their part until nothing is left. Then the head's operands in
// the targets must be gone (the cleanup happens at all), nothing may stay stuck, and no RBAC may stay held.
func (r *lifecycleRun) uninstallAll() {
	r.rec.Stamp(r.final)
	// OLM places a new installation within seconds; one never placed would block the uninstall for good.
	r.apply(lifecycleOp{Kind: opPlaceOther})
	head := ""
	for _, n := range r.model.present() {
		if r.model.isHead(n) {
			head = n
		}
	}
	if head != "" {
		if !r.model.csvs[head].enabled {
			r.apply(lifecycleOp{Kind: opToggle, Name: head})
		}
		key := types.NamespacedName{Namespace: r.ns["op"], Name: head}
		if !r.within(15*time.Second, func() bool { c := getCSV(key); return c != nil && hasFinalizer(c) }) {
			r.violate("head %s with cleanup enabled never got the finalizer %s", head, Finalizer)
		}
	}
	// Half the seeds uninstall newest first (kubectl delete csv op.v3 op.v2 op.v1, or --all in name
	// order): the newer CSVs' cleanups are skipped while an older one is installed, and the oldest one
	// still installed, deleted last with every successor going, is the uninstall (doc.go).
	order := []string{"op.v1", "op.v2", "op.v3"}
	cleaner, expectClean := head, head != ""
	if r.seed/2%2 == 1 {
		order = []string{"op.v3", "op.v2", "op.v1"}
		// The uninstall comes in the middle of an upgrade when one can start: the replaced CSV, which
		// opted in, is the one that cleans up (its successor's cleanup is skipped while it is installed).
		if next := map[string]string{"op.v1": "op.v2", "op.v2": "op.v3"}[head]; next != "" && r.model.canUpgrade(head, next) {
			r.apply(lifecycleOp{Kind: opUpgrade, From: head, To: next})
		}
		cleaner = r.model.oldestInstalled()
		expectClean = cleaner != "" && r.model.csvs[cleaner].enabled
		if expectClean {
			key := types.NamespacedName{Namespace: r.ns["op"], Name: cleaner}
			if !r.within(15*time.Second, func() bool { c := getCSV(key); return c != nil && hasFinalizer(c) }) {
				r.violate("%s, the oldest CSV installed, with cleanup enabled never got the finalizer %s", cleaner, Finalizer)
			}
		}
	}
	// A quarter of the seeds change the OperatorGroup's targets mid-uninstall (lifecycle_targets_test.go).
	shrink := r.seed/4%2 == 1 && expectClean
	dropped := ""
	if shrink {
		dropped = r.heldOperandToDrop()
	}
	scope := r.model.targets
	for _, n := range order {
		r.apply(lifecycleOp{Kind: opDeleteCSV, Name: n})
	}
	r.barrier(r.final)
	if shrink {
		scope = r.shrinkTargetsMidUninstall(dropped)
	}
	gone := func() bool {
		r.do(lifecycleOp{Kind: opOLM})
		r.do(lifecycleOp{Kind: opRelease})
		return len(r.liveCSVs()) == 0
	}
	if !r.within(30*time.Second, gone) {
		for _, c := range r.liveCSVs() {
			r.violate("%s stuck after uninstall: finalizers %v, phase %q reason %q message %q", c.Name, c.Finalizers, c.Status.Phase, c.Status.Reason, c.Status.Message)
		}
	}
	r.checkNothingStuck()
	if expectClean {
		left := r.gearsIn(r.model.notServedByOther(scope))
		if len(left) > 0 {
			r.violate("uninstalling %v (%s doing the cleanup) with cleanup enabled left operands in its targets: %s", order, cleaner, strings.Join(left, ", "))
		}
	}
	if held := r.heldRBAC(); len(held) > 0 {
		r.violate("RBAC still carries %s after every CSV is gone: %s", RBACFinalizer, strings.Join(held, ", "))
	}
	r.tidy()
}

// tidy deletes what the sequence leaves (as the user), so that a later sequence meets none of it: its
// operands and sentinels (held ones could stall a later global cleanup) and any CSV a failed run left.
func (r *lifecycleRun) tidy() {
	r.do(lifecycleOp{Kind: opDeleteOther})
	r.do(lifecycleOp{Kind: opExtensionRelease})
	for _, c := range r.liveCSVs() {
		r.editCSV(keyOf(&c), func(cur *v1alpha1.ClusterServiceVersion) { cur.Finalizers = nil })
		Expect(client.IgnoreNotFound(tenv.admin.Delete(ctx, &c))).To(Succeed())
	}
	for _, s := range []string{"op", "t1", "t2", "out", "sentinel"} {
		for _, u := range r.gears(s) {
			r.userDelete[u.GetUID()] = true
			Expect(client.IgnoreNotFound(tenv.admin.Delete(ctx, &u))).To(Succeed())
		}
	}
	r.releaseDeletingGears([]string{"*"})
}

// gears lists the Gears in the symbolic namespace s.
func (r *lifecycleRun) gears(s string) []unstructured.Unstructured {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: testGroup, Version: testVersion, Kind: lifecycleKind.Kind + "List"})
	Expect(tenv.admin.List(ctx, l, client.InNamespace(r.ns[s]))).To(Succeed())
	return l.Items
}

// within polls cond (every 50ms) for up to d; false is a violation to report, not a spec failure.
func (r *lifecycleRun) within(d time.Duration, cond func() bool) bool {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, d, true, func(context.Context) (bool, error) { return cond(), nil })
	return err == nil
}

func (r *lifecycleRun) liveCSVs() []v1alpha1.ClusterServiceVersion {
	list := &v1alpha1.ClusterServiceVersionList{}
	Expect(tenv.admin.List(ctx, list, client.InNamespace(r.ns["op"]))).To(Succeed())
	return list.Items
}

// gearsIn lists the Gears left in the symbolic namespaces ("*": op, t1, t2), user-deleted ones excluded.
func (r *lifecycleRun) gearsIn(syms []string) []string {
	if len(syms) > 0 && syms[0] == "*" {
		syms = []string{"op", "t1", "t2"}
	}
	var out []string
	for _, s := range syms {
		for _, u := range r.gears(s) {
			out = append(out, s+"/"+u.GetName())
		}
	}
	sort.Strings(out)
	return out
}

// heldRBAC lists this sequence's RBAC objects that still carry RBACFinalizer.
func (r *lifecycleRun) heldRBAC() []string {
	var out []string
	sel := client.MatchingLabels{olmOwnerNamespaceLabel: r.ns["op"]}
	lists := map[string]client.ObjectList{"ClusterRole": &rbacv1.ClusterRoleList{}, "ClusterRoleBinding": &rbacv1.ClusterRoleBindingList{}}
	for kind, l := range lists {
		Expect(tenv.admin.List(ctx, l, sel)).To(Succeed())
		items, err := meta.ExtractList(l)
		Expect(err).NotTo(HaveOccurred())
		for _, it := range items {
			if o := it.(client.Object); hasRBACFinalizer(o) {
				out = append(out, kind+"/"+o.GetName())
			}
		}
	}
	for _, t := range []string{"t1", "t2"} {
		roles := &rbacv1.RoleList{}
		Expect(tenv.admin.List(ctx, roles, client.InNamespace(r.ns[t]))).To(Succeed())
		for i := range roles.Items {
			if hasRBACFinalizer(&roles.Items[i]) {
				out = append(out, "Role/"+r.ns[t]+"/"+roles.Items[i].Name)
			}
		}
	}
	sort.Strings(out)
	return out
}
