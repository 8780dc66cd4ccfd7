package extensioncleanup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/cleanuppass"
)

// mode is the UninstallAnnotation's value; "" for none and for a value this controller does not know
// (reported with ReasonInvalid: an unknown value never deletes anything).
func mode(ce *unstructured.Unstructured) (string, string) {
	v, ok := ce.GetAnnotations()[UninstallAnnotation]
	switch {
	case !ok || v == "":
		return "", ""
	case v == ModeDeleteOperands || v == ModeOrphan:
		return v, ""
	default:
		return "", fmt.Sprintf("annotation %s=%q is neither %q nor %q: OLM v1's own uninstall applies", UninstallAnnotation, v, ModeDeleteOperands, ModeOrphan)
	}
}

// Reconcile acts on one ClusterExtension.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(ClusterExtensionGVK)
	if err := r.client.Get(ctx, req.NamespacedName, ce); err != nil {
		if apierrors.IsNotFound(err) {
			return r.gone(ctx, req.Name)
		}
		return ctrl.Result{}, err
	}
	m, invalid := mode(ce)
	deleting := ce.GetDeletionTimestamp() != nil
	ours := slices.Contains(ce.GetFinalizers(), Finalizer)
	if invalid != "" {
		r.recorder.Eventf(ce, nil, corev1.EventTypeWarning, ReasonInvalid, "Uninstall", "%s", invalid)
	}
	if !deleting {
		if m == "" {
			return ctrl.Result{}, r.optOut(ctx, ce, ours, invalid)
		}
		return r.arm(ctx, ce, m, ours)
	}
	if !ours {
		return ctrl.Result{}, nil // deleted before it was opted in (or after the uninstall was over)
	}
	// The cache may lag behind this reconciler's own finish (a status event queued before the finalizer
	// went): a deleted ClusterExtension is acted on only as read live, so that a stale copy never runs
	// a pass (and its hold) again after release; gone, its holds are swept.
	fresh := &unstructured.Unstructured{}
	fresh.SetGroupVersionKind(ClusterExtensionGVK)
	if err := r.live.Get(ctx, req.NamespacedName, fresh); err != nil {
		if apierrors.IsNotFound(err) {
			return r.gone(ctx, req.Name)
		}
		return ctrl.Result{}, err
	}
	if fresh.GetUID() != ce.GetUID() {
		return r.gone(ctx, req.Name) // gone, and another ClusterExtension of the name already (its own events follow)
	}
	if !slices.Contains(fresh.GetFinalizers(), Finalizer) {
		return ctrl.Result{}, nil // finished already
	}
	ce = fresh
	m, _ = mode(ce)
	holder, err := r.holder(ctx)
	if err != nil {
		// Without a holder nothing was held: only a ClusterExtension held by the finalizer waits, and says why.
		if serr := r.setCondition(ctx, ce, ReasonBlocked, err.Error()); serr != nil {
			return ctrl.Result{}, serr
		}
		return ctrl.Result{RequeueAfter: r.opts.HoldResync}, nil
	}
	if slices.Contains(ce.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		return r.endForegroundWait(ctx, ce)
	}
	if wait := time.Until(r.stateFor(ce.GetName()).quietUntil); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if at, reason, ok := r.releasedAt(ce); ok {
		if reason == ReasonOrphaned && m == "" {
			// Opted out in the settle after an orphan release: OLM v1's own uninstall from here, which
			// takes the CRDs too (release gives them the ClusterExtension's reference back). A switch to
			// the other mode after a release changes nothing: the release stands.
			return r.finish(ctx, ce, holder.UID, false, ReasonAborted, abortedMsg)
		}
		return r.letGo(ctx, ce, holder.UID, reason, at)
	}
	switch m {
	case "":
		return r.finish(ctx, ce, holder.UID, false, ReasonAborted, abortedMsg)
	case ModeOrphan:
		return r.orphan(ctx, ce, holder.UID)
	default:
		return r.cleanup(ctx, ce, holder)
	}
}

const abortedMsg = "opted out while deleted: the uninstall is OLM v1's own from here (nothing more is deleted by this controller)"

// endForegroundWait removes the GC's foregroundDeletion finalizer from an opted-in ClusterExtension
// being deleted (doc.go, invariant 6). While it is there, the GC strips the ClusterExtension's reference
// from every held object (the holder is a live owner) and operator-controller, which keeps reconciling
// the deleted ClusterExtension, patches it back at once: the GC's strip is a patch without a
// resourceVersion (garbagecollector.go attemptToDeleteItem), so one decided before release removed the
// holder lands after it and leaves the object with no owner at all, which nothing ever deletes. Without
// it, the deletion is held by Finalizer as a background one is, and the GC deletes everything once the
// ClusterExtension is gone.
func (r *Reconciler) endForegroundWait(ctx context.Context, ce *unstructured.Unstructured) (ctrl.Result, error) {
	orig := ce.DeepCopy()
	ce.SetFinalizers(slices.DeleteFunc(slices.Clone(ce.GetFinalizers()), func(f string) bool { return f == metav1.FinalizerDeleteDependents }))
	if err := r.client.Patch(ctx, ce, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.stateFor(ce.GetName()).quietUntil = time.Now().Add(r.opts.gcSettle)
	log.FromContext(ctx).Info("foreground deletion held as a background one", "removed", metav1.FinalizerDeleteDependents)
	r.recorder.Eventf(ce, nil, corev1.EventTypeNormal, ReasonForegroundEnded, "Uninstall",
		"foreground deletion carried out as a held background one: %s removed; the ClusterExtension goes once its uninstall is over, its objects then go with it", metav1.FinalizerDeleteDependents)
	return ctrl.Result{RequeueAfter: r.opts.gcSettle}, nil
}

// gone handles a ClusterExtension that no longer exists: its holds are swept (sweepOne).
func (r *Reconciler) gone(ctx context.Context, name string) (ctrl.Result, error) {
	r.forget(name)
	return ctrl.Result{}, r.sweep(ctx, name)
}

// arm prepares an opted-in, installed ClusterExtension: the finalizer (so that a background deletion
// holds everything it owns), and the holder reference on what must outlive a foreground deletion (for
// delete-operands the operator, its RBAC and the CRDs; for orphan the CRDs).
func (r *Reconciler) arm(ctx context.Context, ce *unstructured.Unstructured, m string, ours bool) (ctrl.Result, error) {
	if !ours {
		if err := r.setFinalizer(ctx, ce, true); err != nil {
			return ctrl.Result{}, err
		}
	}
	holder, err := r.holder(ctx)
	if err != nil {
		return ctrl.Result{RequeueAfter: r.opts.HoldResync}, r.setCondition(ctx, ce, ReasonBlocked, err.Error())
	}
	kinds := heldKinds
	if m == ModeOrphan {
		kinds = []schema.GroupVersionKind{crdGVK, secretGVK}
		// Objects held for delete-operands before a switch to orphan lose the hold.
		if _, err := r.releaseKinds(ctx, ce, holder.UID); err != nil {
			return ctrl.Result{}, err
		}
	}
	held, err := r.hold(ctx, ce, holder, kinds...)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The unarmed guard admits a foreground deletion once Holding's message starts with "<mode>:".
	msg := fmt.Sprintf("%s: on deletion %s; holding %d objects: %s", m, describeMode(m), len(held), capped(held, r.opts.MaxPendingListed))
	if m == ModeOrphan {
		if err := r.orphanGuard(ctx); err != nil { // said now, not only once the user deletes it
			return ctrl.Result{RequeueAfter: r.opts.PollInterval}, r.setCondition(ctx, ce, ReasonBlocked, msg+"; but a deletion will wait: "+err.Error())
		}
	}
	return ctrl.Result{RequeueAfter: r.opts.HoldResync}, r.setCondition(ctx, ce, ReasonHolding, msg)
}

// releaseKinds drops holds that orphan mode does not keep (everything but CRDs).
func (r *Reconciler) releaseKinds(ctx context.Context, ce *unstructured.Unstructured, holderUID types.UID) (int, error) {
	objs, err := r.installed(ctx, ce, holderUID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range objs {
		i := refIndex(o.OwnerReferences, holderUID)
		if gvk := o.GroupVersionKind(); gvk == crdGVK || gvk == secretGVK || i < 0 || refIndex(o.OwnerReferences, ce.GetUID()) < 0 {
			continue
		}
		refs := append(append([]metav1.OwnerReference(nil), o.OwnerReferences[:i]...), o.OwnerReferences[i+1:]...)
		if err := r.setRefs(ctx, o, refs, nil); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func describeMode(m string) string {
	if m == ModeOrphan {
		return "its CRDs (and every CR) stay, the rest goes as OLM v1 removes it"
	}
	return "its CRs are deleted and finalized by the running operator before anything it owns goes"
}

// optOut undoes arm for an installed ClusterExtension that is not (or no longer) opted in.
func (r *Reconciler) optOut(ctx context.Context, ce *unstructured.Unstructured, ours bool, invalid string) error {
	if !ours {
		return nil
	}
	if holder, err := r.holder(ctx); err == nil {
		if _, _, err := r.release(ctx, ce, holder.UID, false); err != nil {
			return err
		}
	}
	msg := "not opted in: deleting it is OLM v1's own uninstall"
	if invalid != "" {
		msg = invalid
	}
	if err := r.setCondition(ctx, ce, ReasonAborted, msg); err != nil {
		return err
	}
	return r.setFinalizer(ctx, ce, false)
}

// cleanup runs the ordered uninstall of a deleted, opted-in ClusterExtension: while its operator runs,
// pass after pass deletes the CRs of the kinds it owns; once none is left (checked live), the holds
// are released and the finalizer removed.
func (r *Reconciler) cleanup(ctx context.Context, ce *unstructured.Unstructured, holder metav1.OwnerReference) (ctrl.Result, error) {
	if _, err := r.hold(ctx, ce, holder); err != nil {
		return ctrl.Result{}, err
	}
	p, err := r.buildPlan(ctx, ce, holder.UID)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(p.blocked) > 0 {
		// Nothing deleted, nothing released: either would lose CRs (invariant 4).
		msg := "CRDs also claimed by an OLM v0 CSV: " + strings.Join(p.blocked, ", ") + "; their CRs may be that " +
			"operator's, so none is deleted, and releasing would let the garbage collector delete the CRDs, and every CR " +
			"of them, with this operator gone; the uninstall waits until no CSV owns or requires them (or opt out: " +
			"annotation " + UninstallAnnotation + " removed, and the uninstall goes as upstream's)"
		r.warnOnce(ctx, ce, ReasonBlocked, msg)
		return ctrl.Result{RequeueAfter: r.opts.PollInterval}, r.setCondition(ctx, ce, ReasonBlocked, msg)
	}
	if trouble, err := r.operatorTrouble(ctx, ce, holder.UID); err != nil {
		return ctrl.Result{}, err
	} else if trouble.reason != "" {
		// Deleting CRs now would leave them Terminating with nobody to finalize them: wait, and say why.
		left, err := r.runner.AnyLive(ctx, p)
		if err != nil {
			return ctrl.Result{}, err
		}
		if left {
			msg := trouble.why + "; CRs of " + kindsOf(p) + " are left undeleted until it runs again (or opt out: annotation " + UninstallAnnotation + " removed)"
			r.warnOnce(ctx, ce, trouble.reason, msg)
			return ctrl.Result{RequeueAfter: r.opts.PollInterval}, r.setCondition(ctx, ce, trouble.reason, msg)
		}
	}
	v := &cleanuppass.Verification{Every: r.runner.ReverifyEvery, Verify: func(ctx context.Context) (cleanuppass.Plan, bool, error) {
		return r.verifyLive(ctx, ce, p)
	}}
	res, err := r.runner.Run(ctx, p, v)
	if r.opts.breakReleaseEarly && err == nil {
		// A deliberately broken controller (tests only): lets the operator go after the first pass that
		// completes, its CRs deleted but not finalized. Not "a pass that deleted": a pass stopped by
		// ErrPlanChanged after its Deletes went out counts none, and the next one finds them all deleting.
		// It lets go at once: the running operator would finalize them during gcSettle.
		if res, err := r.finish(ctx, ce, holder.UID, false, ReasonCompleted, "released early (broken for a test)"); err != nil {
			return res, err
		}
		return r.letGo(ctx, ce, holder.UID, ReasonCompleted, time.Now().Add(-r.opts.gcSettle))
	}
	if errors.Is(err, cleanuppass.ErrPlanChanged) {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if res.Pending == 0 && res.Failed == 0 {
		left, err := r.runner.AnyLive(ctx, p)
		if err != nil {
			return ctrl.Result{}, err
		}
		if left {
			return ctrl.Result{RequeueAfter: time.Second}, nil // created since the pass listed its namespace
		}
		note := fmt.Sprintf("every CR of %s deleted and finalized while the operator ran; releasing the operator, its RBAC and CRDs to the garbage collector", kindsOf(p))
		if len(p.notes) > 0 {
			note += "; " + strings.Join(p.notes, "; ")
		}
		return r.finish(ctx, ce, holder.UID, false, ReasonCompleted, note)
	}
	reason, msg := ReasonWaitingOnCleanup, pendingMessage(res, p)
	if stalled := r.stalled(ce.GetName(), res.Pending, res.First); stalled != "" {
		reason, msg = ReasonStalled, stalled+"; "+msg
		r.warnOnce(ctx, ce, ReasonStalled, msg)
	}
	if err := res.DeleteErr(); err != nil {
		msg += "; " + err.Error()
	}
	return ctrl.Result{RequeueAfter: r.opts.PollInterval}, r.setCondition(ctx, ce, reason, msg)
}

// verifyLive re-reads the ClusterExtension and its plan from the API server before Deletes: the same
// object (UID), still deleted, still held by the finalizer, still opted in to delete-operands, and the
// same kinds and namespaces allowed.
func (r *Reconciler) verifyLive(ctx context.Context, cached *unstructured.Unstructured, p *plan) (cleanuppass.Plan, bool, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(ClusterExtensionGVK)
	if err := r.live.Get(ctx, client.ObjectKeyFromObject(cached), live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	m, _ := mode(live)
	if live.GetUID() != cached.GetUID() || live.GetDeletionTimestamp() == nil || !slices.Contains(live.GetFinalizers(), Finalizer) || m != ModeDeleteOperands {
		return nil, false, nil
	}
	holder, err := r.holder(ctx)
	if err != nil {
		return nil, false, err
	}
	fresh, err := r.buildPlan(ctx, live, holder.UID)
	if err != nil {
		return nil, false, err
	}
	if fresh.key() != p.key() {
		return nil, false, nil
	}
	return fresh, true, nil
}

type trouble struct{ reason, why string }

// operatorTrouble says whether the operator can finalize CRs now: one of its Deployments exists, is not
// being deleted and has an available replica.
func (r *Reconciler) operatorTrouble(ctx context.Context, ce *unstructured.Unstructured, holderUID types.UID) (trouble, error) {
	deps, err := r.installed(ctx, ce, holderUID, deploymentGVK)
	if err != nil {
		return trouble{}, err
	}
	var names []string
	for _, d := range deps {
		dep := &appsv1.Deployment{}
		if err := r.live.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, dep); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return trouble{}, err
		}
		if dep.DeletionTimestamp != nil {
			names = append(names, objName(dep)+" (being deleted)")
			continue
		}
		if dep.Status.AvailableReplicas > 0 {
			return trouble{}, nil
		}
		names = append(names, objName(dep)+" (no available replica)")
	}
	if len(names) == 0 {
		return trouble{ReasonOperatorGone, "the operator is gone: ClusterExtension " + ce.GetName() + " owns no Deployment any more"}, nil
	}
	return trouble{ReasonOperatorNotRunning, "the operator is not running: Deployment " + strings.Join(names, ", ")}, nil
}

// stalled reports a pending count that has not decreased for StallTimeout, naming the first blocking
// CRs and their finalizers (a finalizer nobody removes, e.g. another controller's, is the usual cause).
func (r *Reconciler) stalled(name string, pending int, first []cleanuppass.Object) string {
	st := r.stateFor(name)
	now := time.Now()
	if st.lowest < 0 || pending < st.lowest {
		st.lowest, st.stallSince = pending, now
		return ""
	}
	if now.Sub(st.stallSince) < r.opts.StallTimeout {
		return ""
	}
	var blocking []string
	for _, o := range first {
		if o.Deleting && len(o.Finalizers) > 0 {
			blocking = append(blocking, fmt.Sprintf("%s (finalizers: %s)", o, strings.Join(o.Finalizers, ",")))
		}
	}
	msg := fmt.Sprintf("no progress for %s", now.Sub(st.stallSince).Round(time.Second))
	if len(blocking) > 0 {
		msg += ": waiting on the finalizers of " + capped(blocking, r.opts.MaxPendingListed)
	}
	return msg
}

// finish releases the holds (restoring the ClusterExtension's references the garbage collector
// stripped; for orphan, marking the CRDs) and writes the final condition and event; letGo removes the
// finalizer gcSettle later.
func (r *Reconciler) finish(ctx context.Context, ce *unstructured.Unstructured, holderUID types.UID, orphanCRDs bool, reason, msg string) (ctrl.Result, error) {
	if _, _, err := r.release(ctx, ce, holderUID, orphanCRDs); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.setCondition(ctx, ce, reason, msg); err != nil {
		return ctrl.Result{}, err
	}
	r.recorder.Eventf(ce, nil, corev1.EventTypeNormal, reason, "Uninstall", "%s", msg)
	r.stateFor(ce.GetName()).releasedAt = time.Now()
	return ctrl.Result{RequeueAfter: r.opts.gcSettle}, nil
}

// releasedAt reports whether the uninstall of the deleted ce has released its holds, and when: this
// controller's own record, or after a restart the final condition written since the deletion (its
// transition time; one written before the deletion, e.g. an opt-out, does not count).
func (r *Reconciler) releasedAt(ce *unstructured.Unstructured) (time.Time, string, bool) {
	conds, err := Conditions(ce)
	if err != nil {
		return time.Time{}, "", false
	}
	c := meta.FindStatusCondition(conds, ConditionType)
	if c == nil || !released[c.Reason] {
		return time.Time{}, "", false
	}
	if at := r.stateFor(ce.GetName()).releasedAt; !at.IsZero() {
		return at, c.Reason, true
	}
	if c.LastTransitionTime.After(ce.GetDeletionTimestamp().Time) {
		return c.LastTransitionTime.Time, c.Reason, true
	}
	return time.Time{}, "", false
}

// letGo removes Finalizer from a released ClusterExtension once gcSettle has passed since the release
// (doc.go, invariant 6): the garbage collector decides a strip from a read of the object and then one of
// its owners, and patches without a resourceVersion; one it began while the holder was still there, if
// the ClusterExtension went right after the release, would strip the only reference left. It releases
// again first: anything that changed restarts the wait.
func (r *Reconciler) letGo(ctx context.Context, ce *unstructured.Unstructured, holderUID types.UID, reason string, at time.Time) (ctrl.Result, error) {
	if wait := r.opts.gcSettle - time.Since(at); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	_, changed, err := r.release(ctx, ce, holderUID, reason == ReasonOrphaned)
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed > 0 {
		r.stateFor(ce.GetName()).releasedAt = time.Now()
		return ctrl.Result{RequeueAfter: r.opts.gcSettle}, nil
	}
	if err := r.setFinalizer(ctx, ce, false); err != nil {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("uninstall over: finalizer removed", "reason", reason)
	r.forget(ce.GetName())
	return ctrl.Result{}, nil
}

// orphan leaves the extension's CRDs (and every CR) behind: they keep the holder's reference through
// the ClusterExtension's removal (the GC strips the ClusterExtension's), everything else goes as OLM v1
// removes it.
func (r *Reconciler) orphan(ctx context.Context, ce *unstructured.Unstructured, holderUID types.UID) (ctrl.Result, error) {
	// Invariant (doc.go, invariant 7): no CRD is marked orphaned, and no holder's reference dropped from
	// it, unless the orphan guard is in force: everything stays held meanwhile.
	if err := r.orphanGuard(ctx); err != nil {
		return ctrl.Result{RequeueAfter: r.opts.PollInterval}, r.setCondition(ctx, ce, ReasonBlocked, "orphan uninstall waits, nothing released: "+err.Error())
	}
	crds, err := r.installed(ctx, ce, holderUID, crdGVK)
	if err != nil {
		return ctrl.Result{}, err
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	msg := fmt.Sprintf("orphaning: CRDs %s kept (annotation %s; the holder's owner reference until the ClusterExtension is gone, then none; helm's meta.helm.sh/release-name and app.kubernetes.io/managed-by unchanged so that a ClusterExtension of the same name and namespace adopts them); the rest goes as OLM v1 removes it",
		capped(names, r.opts.MaxPendingListed), OrphanedFromAnnotation)
	return r.finish(ctx, ce, holderUID, true, ReasonOrphaned, msg)
}

// setFinalizer adds or removes Finalizer on the live ClusterExtension (the same object: UID) with a merge
// patch guarded by resourceVersion.
func (r *Reconciler) setFinalizer(ctx context.Context, cached *unstructured.Unstructured, on bool) error {
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(ClusterExtensionGVK)
	if err := r.live.Get(ctx, client.ObjectKeyFromObject(cached), ce); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ce.GetUID() != cached.GetUID() {
		return nil // another ClusterExtension of the same name: its own reconcile
	}
	if slices.Contains(ce.GetFinalizers(), Finalizer) == on {
		return nil
	}
	orig := ce.DeepCopy()
	fs := slices.DeleteFunc(slices.Clone(ce.GetFinalizers()), func(f string) bool { return f == Finalizer })
	if on {
		fs = append(fs, Finalizer)
	}
	ce.SetFinalizers(fs)
	return r.client.Patch(ctx, ce, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}
