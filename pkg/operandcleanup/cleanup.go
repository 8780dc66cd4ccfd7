package operandcleanup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// planTTL bounds how long a resolved plan (owned CRDs read from the API server) is reused between passes.
const planTTL = 30 * time.Second

// reconcileDeleting handles a CSV with a deletionTimestamp.
func (r *Reconciler) reconcileDeleting(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) (ctrl.Result, error) {
	key := keyOf(csv)
	if !hasFinalizer(csv) {
		r.forget(key)
		return ctrl.Result{}, r.releaseRBAC(ctx, key)
	}
	if !csv.Spec.Cleanup.Enabled {
		// Abort: the user opted out while the cleanup was pending. Operands already deleted stay deleted.
		return ctrl.Result{}, r.finish(ctx, csv, outcomeAborted, "operand cleanup aborted (spec.cleanup.enabled is false); remaining CRs are left in place")
	}
	// Deleting an upgrade target while the CSV it replaces still runs is not an uninstall (invariant 2).
	prev, err := installedPredecessor(ctx, r.live, csv)
	if err != nil {
		return ctrl.Result{}, err
	}
	if prev != nil {
		return ctrl.Result{}, r.finish(ctx, csv, outcomeSkipped, fmt.Sprintf(
			"operand cleanup skipped: the CSV this one replaces, %s, is still installed and keeps serving the operands (its spec.cleanup.enabled is %t)",
			prev.Name, prev.Spec.Cleanup.Enabled))
	}
	// Whatever OLM has not deleted yet (it races with us right after the deletion) is held now.
	if err := r.holdRBAC(ctx, key); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.recordUninstallTargets(ctx, csv); err != nil {
		return ctrl.Result{}, err
	}
	return r.runCleanup(ctx, csv)
}

// recordUninstallTargets writes the namespaces the operator watches to UninstallTargetsAnnotation when the
// CSV has none yet: before the first Delete, so that a restarted controller still knows them. They are
// read from the API server: olm.targetNamespaces as OLM merged it into the operator's Deployments (what
// the operator reads), else the CSV's targets. Unresolvable targets are left for runCleanup to report
// (nothing is deleted then).
func (r *Reconciler) recordUninstallTargets(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) error {
	if _, ok := uninstallTargets(csv); ok {
		return nil
	}
	t, ok, err := r.deploymentTargets(ctx, csv)
	if err != nil {
		return err
	}
	if !ok {
		t, err = resolveTargets(ctx, r.live, csv)
		var blocked *errNoTargets
		if errors.As(err, &blocked) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return r.patchCSV(ctx, csv, func(c *v1alpha1.ClusterServiceVersion) {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, UninstallTargetsAnnotation, t.encode())
	})
}

// runCleanup is one cleanup pass: resolve the plan, list operands, delete those not yet deleting, report.
func (r *Reconciler) runCleanup(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) (ctrl.Result, error) {
	key := keyOf(csv)
	st := r.stateFor(key)
	p, err := r.planFor(ctx, csv, st, false)
	var blocked *errNoTargets
	isBlocked := errors.As(err, &blocked)
	var on types.NamespacedName
	if isBlocked {
		on = blocked.on
	}
	r.waitOn(st, on)
	if isBlocked {
		return r.reportBlocked(ctx, csv, st, blocked.msg)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.watches.track(ctx, key, p); err != nil {
		return ctrl.Result{}, fmt.Errorf("watching operands: %w", err)
	}
	// A pass that deleted nothing only watches progress: the next one waits as long as it took, so that
	// re-listing a large cleanup never keeps the API server busy more than half the time.
	if wait := time.Until(st.nextPass); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	started := time.Now()
	res, err := r.runPass(ctx, csv, p)
	var lerr *listError
	switch {
	case errors.Is(err, errPlanChanged):
		st.plan = nil // something changed under us: re-plan from the new state
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case errors.As(err, &lerr):
		r.watches.reset(lerr.GK)
		st.plan = nil
		return ctrl.Result{}, err
	case err != nil:
		return ctrl.Result{}, err
	}
	if res.Deleted == 0 {
		st.nextPass = time.Now().Add(time.Since(started))
	}
	if err = res.DeleteErr(); err != nil {
		log.FromContext(ctx).Error(err, "some operand deletes failed; retrying")
	}
	metricPending.WithLabelValues(key.Namespace, key.Name).Set(float64(res.Pending))
	if res.Pending == 0 && err == nil {
		left, lerr := r.anyOperandLive(ctx, p)
		if lerr != nil {
			return ctrl.Result{}, lerr
		}
		if left {
			return ctrl.Result{RequeueAfter: time.Second}, nil // created since the pass listed its namespace
		}
		note := "operand cleanup completed"
		if len(p.notes) > 0 {
			note += "; " + strings.Join(p.notes, "; ")
		}
		return ctrl.Result{}, r.finish(ctx, csv, "completed", note)
	}
	lists, listed := pendingLists(res.First, r.opts.MaxPendingListed)
	msg := waitingMessage(res.Pending, listed, p.notes)
	reason := ReasonWaitingOnCleanup
	if trouble, err := r.operatorGone(ctx, csv); err != nil {
		return ctrl.Result{}, err
	} else if trouble.why != "" {
		// Nothing removes the operands' finalizers now: say so where users look (invariant 5).
		reason, msg = trouble.reason, operatorTroubleMessage(trouble, res.Pending, listed)
		r.warnOperatorGone(ctx, csv, st, trouble.reason, msg)
	}
	// The stall clock first (it may resume from the status a previous run wrote), then the status, which
	// persists it.
	// No event tells that the operator's Deployment or namespace went away (they are not watched, to keep
	// the cache small): while operands are pending, look again at least every Options.operatorRecheck().
	next := min(r.opts.ResyncInterval, r.checkStall(ctx, csv, st, res), r.opts.operatorRecheck())
	progress := metav1.NewTime(st.stallSince.Truncate(time.Second))
	wait, serr := r.writeStatus(ctx, csv, st, reason, msg, lists, &progress)
	if serr != nil && err == nil {
		err = serr
	}
	if wait > 0 {
		next = min(next, wait)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// planFor returns the CSV's plan, reusing a recent one when the inputs did not change. force rebuilds it
// from the API server alone (right before deleting); otherwise OperatorGroups and other CSVs come from
// the cache.
func (r *Reconciler) planFor(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, st *csvState, force bool) (*plan, error) {
	var reader client.Reader = r.cache
	if force {
		reader = r.live
	}
	t, err := resolveTargets(ctx, reader, csv)
	if err != nil {
		return nil, err
	}
	started, _ := uninstallTargets(csv)
	pk := fmt.Sprintf("%s|%d|%t|%s|%t|%s", csv.UID, csv.Generation, t.all, strings.Join(t.namespaces, ","), started.all, strings.Join(started.namespaces, ","))
	if !force && st.plan != nil && st.planKey == pk && r.opts.Now().Before(st.planExpires) {
		return st.plan, nil
	}
	p, err := buildPlan(ctx, r.live, reader, csv, t)
	if err != nil {
		return nil, err
	}
	st.plan, st.planKey, st.planExpires = p, pk, r.opts.Now().Add(planTTL)
	return p, nil
}

// verifyLive re-reads the CSV and its successors from the API server right before operands are deleted.
// It returns a plan rebuilt from the live CSV, and ok=false if the CSV no longer asks for a cleanup or the
// plan no longer matches (different targets or owned types).
func (r *Reconciler) verifyLive(ctx context.Context, cached *v1alpha1.ClusterServiceVersion, p *plan) (*plan, bool, error) {
	live := &v1alpha1.ClusterServiceVersion{}
	if err := r.live.Get(ctx, keyOf(cached), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	if live.UID != cached.UID || !isDeleting(live) || !hasFinalizer(live) || !live.Spec.Cleanup.Enabled || isCopied(live) || isReplacedByPhase(live) {
		return nil, false, nil
	}
	if s, err := liveSuccessor(ctx, r.live, live, false); err != nil || s != nil {
		return nil, false, err
	}
	if prev, err := installedPredecessor(ctx, r.live, live); err != nil || prev != nil {
		return nil, false, err
	}
	fresh, err := r.planFor(ctx, live, &csvState{}, true)
	if err != nil {
		var blocked *errNoTargets
		if errors.As(err, &blocked) {
			return nil, false, nil
		}
		return nil, false, err
	}
	if !samePlan(p, fresh) {
		return nil, false, nil
	}
	return fresh, true, nil
}

func samePlan(a, b *plan) bool {
	if a.targets.encode() != b.targets.encode() || a.started.encode() != b.started.encode() || len(a.types) != len(b.types) || a.exclusionKey() != b.exclusionKey() {
		return false
	}
	for gk, ns := range a.allowed {
		if bns, ok := b.allowed[gk]; !ok || bns != ns {
			return false
		}
	}
	return true
}

// reportBlocked records why the cleanup cannot start (status and a Warning event once per reason); it
// is retried on OperatorGroup events and every ResyncInterval.
func (r *Reconciler) reportBlocked(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, st *csvState, msg string) (ctrl.Result, error) {
	msg = "operand cleanup blocked: " + msg
	if st.lastBlocked != msg {
		st.lastBlocked = msg
		r.recorder.Eventf(csv, nil, corev1.EventTypeWarning, EventReasonBlocked, "Cleanup", "%s", msg)
	}
	wait, err := r.writeStatus(ctx, csv, st, ReasonWaitingOnCleanup, msg, nil, nil)
	if err != nil {
		return ctrl.Result{}, err
	}
	next := r.opts.ResyncInterval
	if wait > 0 {
		next = min(next, wait)
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// Outcomes of a cleanup, for finish.
const (
	outcomeCompleted = "completed"
	outcomeAborted   = "aborted"
	outcomeSkipped   = "skipped"
)

// finish ends a cleanup (completed, aborted or skipped): the status says so first (invariant 5: it never
// keeps describing a cleanup that is over), then the operator's RBAC is released (OLM's pending deletion
// of it completes), then the CSV finalizer goes.
func (r *Reconciler) finish(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, outcome, note string) error {
	key := keyOf(csv)
	reason := map[string]v1alpha1.ConditionReason{outcomeCompleted: ReasonCleanupCompleted, outcomeAborted: ReasonCleanupAborted, outcomeSkipped: ReasonCleanupSkipped}[outcome]
	if isDeleting(csv) {
		if err := r.writeFinalStatus(ctx, csv, reason, note); err != nil {
			return err
		}
	}
	if err := r.releaseRBAC(ctx, key); err != nil {
		return err
	}
	if err := r.patchCSV(ctx, csv, func(c *v1alpha1.ClusterServiceVersion) { controllerutil.RemoveFinalizer(c, Finalizer) }); err != nil {
		return err
	}
	if ts := csv.GetDeletionTimestamp(); ts != nil {
		metricDuration.WithLabelValues(outcome).Observe(r.opts.Now().Sub(ts.Time).Seconds())
	}
	r.recorder.Eventf(csv, nil, corev1.EventTypeNormal, string(reason), "Cleanup", "%s", note)
	log.FromContext(ctx).Info(note)
	r.forget(key)
	return nil
}
