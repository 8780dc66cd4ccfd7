package operandcleanup

import (
	"context"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The operator's cluster RBAC is kept alive during a cleanup by holding OLM's own objects with
// RBACFinalizer, never by creating or changing any RBAC: the only writes are merge patches of
// metadata.finalizers (which the API server exempts from its RBAC escalation checks), so the controller
// needs neither "escalate" nor "bind" nor "create" on RBAC.

// Field indexes on the cached ClusterRoles/ClusterRoleBindings.
const (
	// rbacOwnerField: "<ns>/<csv>" for objects OLM made for a CSV (olm.owner* labels, the selector OLM
	// deletes them with).
	rbacOwnerField = "operandcleanup.olm-owner"
	// rbacHeldField: rbacHeldValue for objects carrying RBACFinalizer (what the sweep looks at).
	rbacHeldField = "operandcleanup.held"
	rbacHeldValue = "held"
)

// olmOwnerKey is the rbacOwnerField indexer: the CSV OLM's labels name, namespace and name both required.
func olmOwnerKey(obj client.Object) []string {
	l := obj.GetLabels()
	if l[olmOwnerKindLabel] != olmOwnerKindCSV || l[olmOwnerLabel] == "" || l[olmOwnerNamespaceLabel] == "" {
		return nil
	}
	return []string{l[olmOwnerNamespaceLabel] + "/" + l[olmOwnerLabel]}
}

// heldKey is the rbacHeldField indexer.
func heldKey(obj client.Object) []string {
	if controllerutil.ContainsFinalizer(obj, RBACFinalizer) {
		return []string{rbacHeldValue}
	}
	return nil
}

// madeFor reports whether OLM's labels on obj name exactly the CSV key (namespace and name). It guards
// every finalizer addition, on top of the index lookup.
func madeFor(obj client.Object, key types.NamespacedName) bool {
	k := olmOwnerKey(obj)
	return len(k) == 1 && k[0] == key.String()
}

// clusterRBACOf returns the cached ClusterRoleBindings and ClusterRoles OLM made for the CSV: its
// clusterPermissions and, for AllNamespaces operators, the ClusterRoles/Bindings OLM lifts from the
// namespaced permissions (they copy the Roles' olm.owner* labels).
func (r *Reconciler) clusterRBACOf(ctx context.Context, key types.NamespacedName) ([]client.Object, error) {
	return r.listRBAC(ctx, client.MatchingFields{rbacOwnerField: key.String()})
}

func (r *Reconciler) listRBAC(ctx context.Context, opts ...client.ListOption) ([]client.Object, error) {
	var roles rbacv1.ClusterRoleList
	var bindings rbacv1.ClusterRoleBindingList
	if err := r.cache.List(ctx, &bindings, opts...); err != nil {
		return nil, err
	}
	if err := r.cache.List(ctx, &roles, opts...); err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(roles.Items)+len(bindings.Items))
	for i := range bindings.Items {
		out = append(out, &bindings.Items[i])
	}
	for i := range roles.Items {
		out = append(out, &roles.Items[i])
	}
	return out, nil
}

// holdRBAC puts RBACFinalizer on the CSV's OLM-made cluster RBAC that is not being deleted yet (the API
// server refuses new finalizers on objects being deleted: whatever OLM already deleted is beyond reach).
func (r *Reconciler) holdRBAC(ctx context.Context, key types.NamespacedName) error {
	objs, err := r.clusterRBACOf(ctx, key)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if isDeleting(o) || controllerutil.ContainsFinalizer(o, RBACFinalizer) || !madeFor(o, key) {
			continue
		}
		if err := r.patchRBACFinalizer(ctx, o, true); err != nil {
			return err
		}
	}
	return nil
}

// releaseRBAC removes RBACFinalizer from the CSV's OLM-made cluster RBAC. Objects OLM already deleted
// then go away; the others stay OLM's as before.
func (r *Reconciler) releaseRBAC(ctx context.Context, key types.NamespacedName) error {
	objs, err := r.clusterRBACOf(ctx, key)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if controllerutil.ContainsFinalizer(o, RBACFinalizer) {
			if err := r.patchRBACFinalizer(ctx, o, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// patchRBACFinalizer adds or removes RBACFinalizer with a merge patch of metadata.finalizers guarded by
// the resourceVersion: nothing else of the object is ever sent.
func (r *Reconciler) patchRBACFinalizer(ctx context.Context, obj client.Object, hold bool) error {
	updated := obj.DeepCopyObject().(client.Object)
	if hold {
		controllerutil.AddFinalizer(updated, RBACFinalizer)
	} else {
		controllerutil.RemoveFinalizer(updated, RBACFinalizer)
	}
	err := r.client.Patch(ctx, updated, client.MergeFromWithOptions(obj, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		verb := "releasing"
		if hold {
			verb = "holding"
		}
		return fmt.Errorf("%s %T %s: %w", verb, obj, obj.GetName(), err)
	}
	log.FromContext(ctx).V(1).Info("cluster RBAC finalizer", "hold", hold, "kind", fmt.Sprintf("%T", obj), "name", obj.GetName())
	return nil
}

// sweepRBAC runs while the controller leads: at start (once the cache is synced) and every
// ResyncInterval it looks at every ClusterRole/Binding carrying RBACFinalizer. The CSV its labels name is
// reconciled (which releases the finalizer unless that CSV still needs it: gone, cleanup disabled,
// replaced, cleanup over), and an object whose labels no longer name any CSV is released at once. This
// covers CSVs that vanished while the controller was down and events that were missed.
func (r *Reconciler) sweepRBAC(ctx context.Context) error {
	if !r.cache.WaitForCacheSync(ctx) {
		return nil
	}
	t := time.NewTicker(r.opts.ResyncInterval)
	defer t.Stop()
	for {
		if err := r.sweepRBACOnce(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "sweeping cluster RBAC finalizers")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (r *Reconciler) sweepRBACOnce(ctx context.Context) error {
	objs, err := r.listRBAC(ctx, client.MatchingFields{rbacHeldField: rbacHeldValue})
	if err != nil {
		return err
	}
	var errs []error
	for _, o := range objs {
		if len(olmOwnerKey(o)) == 0 {
			if err := r.patchRBACFinalizer(ctx, o, false); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		select {
		case r.sweep <- event.GenericEvent{Object: o}:
		case <-ctx.Done():
			return nil
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d releases failed, first: %w", len(errs), errs[0])
	}
	return nil
}
