package operandcleanup

import (
	"context"
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

// conflictRetry is the requeue delay after an optimistic-concurrency conflict (the cache was behind).
const conflictRetry = 200 * time.Millisecond

// Reconcile handles one CSV: opt-in finalizer, upgrade hand-over, holding its cluster RBAC and, once the CSV is
// being deleted, the operand cleanup itself.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if err != nil && ctx.Err() != nil {
		return ctrl.Result{}, nil // shutting down: the next leader picks the CSV up from its state
	}
	if err != nil && (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
		// A write raced with another writer or with the object's removal: not an error, look again once
		// the cache caught up.
		log.FromContext(ctx).V(1).Info("retrying after a write race", "reason", err.Error())
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	csv := &v1alpha1.ClusterServiceVersion{}
	if err := r.cache.Get(ctx, req.NamespacedName, csv); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return r.reconcileGone(ctx, req.NamespacedName)
	}
	if isCopied(csv) {
		// Not the installation: never ours to hold (nor anything labelled for it).
		if err := r.releaseRBAC(ctx, req.NamespacedName); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.patchCSV(ctx, csv, func(c *v1alpha1.ClusterServiceVersion) { controllerutil.RemoveFinalizer(c, Finalizer) })
	}
	succ, err := successors(ctx, r.cache, csv, true)
	if err != nil {
		return ctrl.Result{}, err
	}
	if isReplacedByPhase(csv) || (len(succ) > 0 && !isDeleting(csv)) {
		return ctrl.Result{}, r.reconcileReplaced(ctx, csv, succ)
	}
	if len(succ) > 0 {
		// Being deleted with a successor: an upgrade's deletion, unless every successor is going too (an
		// uninstall that deleted the new CSV first). Dropping the finalizer cannot be undone: ask the API
		// server, not the cache.
		live, err := liveSuccessor(ctx, r.live, csv, false)
		if err != nil {
			return ctrl.Result{}, err
		}
		if live != nil {
			return ctrl.Result{}, r.reconcileReplaced(ctx, csv, succ)
		}
	}
	if !isDeleting(csv) {
		return ctrl.Result{}, r.reconcileActive(ctx, csv)
	}
	return r.reconcileDeleting(ctx, csv)
}

// reconcileGone runs when the CSV is not in the cache: release its cluster RBAC and drop the bookkeeping
// once the API server confirms it is gone. If it still exists, either the cache is behind (its event will come) or
// it is an OLM copy, which the cache leaves out: a copy must never keep this finalizer.
func (r *Reconciler) reconcileGone(ctx context.Context, key types.NamespacedName) (ctrl.Result, error) {
	live := &v1alpha1.ClusterServiceVersion{}
	err := r.live.Get(ctx, key, live)
	if err == nil {
		if isCopied(live) {
			return ctrl.Result{}, r.patchCSV(ctx, live, func(c *v1alpha1.ClusterServiceVersion) { controllerutil.RemoveFinalizer(c, Finalizer) })
		}
		return ctrl.Result{}, nil
	}
	if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if err := r.releaseRBAC(ctx, key); err != nil {
		return ctrl.Result{}, err
	}
	r.forget(key)
	return ctrl.Result{}, nil
}

// reconcileActive handles a CSV that is not being deleted: the finalizer follows spec.cleanup.enabled, and
// while it is enabled the cluster RBAC OLM made for the CSV carries RBACFinalizer, so that OLM's deletion
// of it on uninstall only takes effect once the cleanup is over.
func (r *Reconciler) reconcileActive(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) error {
	key := keyOf(csv)
	if !csv.Spec.Cleanup.Enabled {
		if err := r.releaseRBAC(ctx, key); err != nil {
			return err
		}
		if err := r.patchCSV(ctx, csv, func(c *v1alpha1.ClusterServiceVersion) { controllerutil.RemoveFinalizer(c, Finalizer) }); err != nil {
			return err
		}
		r.forget(key)
		return nil
	}
	if err := r.patchCSV(ctx, csv, func(c *v1alpha1.ClusterServiceVersion) { controllerutil.AddFinalizer(c, Finalizer) }); err != nil {
		return err
	}
	return r.holdRBAC(ctx, key)
}

// reconcileReplaced handles a CSV an upgrade replaces (a successor exists, or OLM is deleting it as
// replaced): the successors get spec.cleanup.enabled when this CSV has it, and this CSV releases its
// hold on RBAC (OLM deletes the replaced CSV's). It loses the finalizer once it is deleted while a
// successor stays, or OLM marks it replaced, so that deletion never triggers a cleanup; until then the
// finalizer follows its opt-in as for any installation, so that an uninstall that deletes the successor
// first and then this CSV still cleans up (its deletion then finds no successor that stays). Its own
// spec.cleanup.enabled is left as the user set it (invariant 4): if the successor vanishes, this CSV is
// the installation again and the opt-in still applies; a re-created successor inherits it again.
func (r *Reconciler) reconcileReplaced(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, succ []v1alpha1.ClusterServiceVersion) error {
	key := keyOf(csv)
	var handedTo []string
	if csv.Spec.Cleanup.Enabled {
		for i := range succ {
			s := &succ[i]
			if s.Spec.Cleanup.Enabled || isDeleting(s) || s.GetAnnotations()[HandOverAnnotation] != "" {
				continue // already opted in, going away, or handed over before (the user may have changed it since)
			}
			if err := r.patchCSV(ctx, s, func(c *v1alpha1.ClusterServiceVersion) {
				c.Spec.Cleanup.Enabled = true
				metav1.SetMetaDataAnnotation(&c.ObjectMeta, HandOverAnnotation, csv.Name)
			}); err != nil {
				return fmt.Errorf("propagating spec.cleanup.enabled to successor %s: %w", s.Name, err)
			}
			handedTo = append(handedTo, s.Name)
		}
	}
	held := hasFinalizer(csv)
	// OLM must be able to delete the replaced CSV's cluster RBAC: release it before anything else.
	if err := r.releaseRBAC(ctx, key); err != nil {
		return err
	}
	keep := csv.Spec.Cleanup.Enabled && !isDeleting(csv) && !isReplacedByPhase(csv)
	if err := r.patchCSV(ctx, csv, func(c *v1alpha1.ClusterServiceVersion) {
		if keep {
			controllerutil.AddFinalizer(c, Finalizer)
		} else {
			controllerutil.RemoveFinalizer(c, Finalizer)
		}
	}); err != nil {
		return err
	}
	if (held && !keep) || len(handedTo) > 0 {
		note := "CSV is being replaced by an upgrade: no operand cleanup when it is deleted while its successor stays"
		if len(handedTo) > 0 {
			note += "; spec.cleanup.enabled handed over to " + strings.Join(handedTo, ", ")
		}
		r.recorder.Eventf(csv, nil, corev1.EventTypeNormal, EventReasonUpgrade, "Upgrade", "%s", note)
		log.FromContext(ctx).Info(note)
	}
	r.forget(key)
	return nil
}

// patchCSV applies mutate to a copy of csv and sends the difference as a merge patch guarded by the
// resourceVersion (cached CSVs are stripped, so they are never sent whole). No-op when nothing changed.
func (r *Reconciler) patchCSV(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, mutate func(*v1alpha1.ClusterServiceVersion)) error {
	updated := csv.DeepCopy()
	mutate(updated)
	if equalSpecMeta(csv, updated) {
		return nil
	}
	if err := r.client.Patch(ctx, updated, client.MergeFromWithOptions(csv, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching CSV %s/%s: %w", csv.Namespace, csv.Name, err)
	}
	*csv = *updated
	return nil
}

func equalSpecMeta(a, b *v1alpha1.ClusterServiceVersion) bool {
	return a.Spec.Cleanup == b.Spec.Cleanup && strings.Join(a.Finalizers, "\x00") == strings.Join(b.Finalizers, "\x00") &&
		sameAnnotation(a, b, HandOverAnnotation) && sameAnnotation(a, b, UninstallTargetsAnnotation)
}

// sameAnnotation compares presence too: UninstallTargetsAnnotation "" (all namespaces) is not its absence.
func sameAnnotation(a, b *v1alpha1.ClusterServiceVersion, key string) bool {
	va, oka := a.GetAnnotations()[key]
	vb, okb := b.GetAnnotations()[key]
	return va == vb && oka == okb
}
