package operandcleanup

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The operator's RBAC is kept alive during a cleanup by holding OLM's own objects with RBACFinalizer, never
// by creating or changing any RBAC: the only writes are finalizer-only patches (which the API server
// exempts from its RBAC escalation checks), so the controller needs neither "escalate" nor "bind" nor
// "create" on RBAC. Held: the ClusterRoles/Bindings OLM deletes as soon as the CSV is deleted, and the
// Roles/RoleBindings of the operator's namespace and of its target namespaces (OLM copies them there),
// which the namespace controller deletes when such a namespace is deleted during the cleanup.

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
// A Role/RoleBinding OLM copied into a target namespace names the copied CSV there (same name) and
// carries olm.copiedFrom=<operator namespace>: it belongs to the CSV of the operator namespace.
func olmOwnerKey(obj client.Object) []string {
	l := obj.GetLabels()
	if l[olmOwnerKindLabel] != olmOwnerKindCSV || l[olmOwnerLabel] == "" || l[olmOwnerNamespaceLabel] == "" {
		return nil
	}
	if from := l[v1alpha1.CopiedLabelKey]; from != "" && obj.GetNamespace() != "" {
		return []string{from + "/" + l[olmOwnerLabel]}
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

// rbacOf returns the cached RBAC OLM made for the CSV: ClusterRoles/Bindings (its clusterPermissions and,
// for AllNamespaces operators, those OLM lifts from the namespaced permissions) and Roles/RoleBindings
// (its permissions, in its namespace and copied into its target namespaces).
func (r *Reconciler) rbacOf(ctx context.Context, key types.NamespacedName) ([]client.Object, error) {
	return r.listRBAC(ctx, client.MatchingFields{rbacOwnerField: key.String()})
}

// rbacLists are the kinds of RBAC objects the controller may hold.
func rbacLists() []client.ObjectList {
	return []client.ObjectList{&rbacv1.ClusterRoleBindingList{}, &rbacv1.ClusterRoleList{}, &rbacv1.RoleBindingList{}, &rbacv1.RoleList{}}
}

func (r *Reconciler) listRBAC(ctx context.Context, opts ...client.ListOption) ([]client.Object, error) {
	var out []client.Object
	for _, l := range rbacLists() {
		if err := r.cache.List(ctx, l, opts...); err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			out = append(out, it.(client.Object))
		}
	}
	return out, nil
}

// holdRBAC puts RBACFinalizer on the CSV's OLM-made RBAC that is not being deleted yet (the API server
// refuses new finalizers on objects being deleted: whatever was already deleted is beyond reach). The
// decision to hold is made from the live CSV (invariant 6), never from the cache alone: a reconcile
// working from a stale CSV right after a cleanup ended must not hold its RBAC again.
func (r *Reconciler) holdRBAC(ctx context.Context, key types.NamespacedName) error {
	objs, err := r.rbacOf(ctx, key)
	if err != nil {
		return err
	}
	var todo []client.Object
	for _, o := range objs {
		if !isDeleting(o) && !controllerutil.ContainsFinalizer(o, RBACFinalizer) && madeFor(o, key) {
			todo = append(todo, o)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if ok, err := r.wantsRBACHold(ctx, key); err != nil || !ok {
		return err
	}
	for _, o := range todo {
		if err := r.patchRBACFinalizer(ctx, o, true); err != nil {
			return err
		}
	}
	return nil
}

// wantsRBACHold reads the CSV from the API server: its RBAC is held only while it exists, is the
// installation (not a copy, not replaced, no successor that stays), has cleanup enabled and still carries the
// cleanup finalizer (a finished cleanup removed it).
func (r *Reconciler) wantsRBACHold(ctx context.Context, key types.NamespacedName) (bool, error) {
	live := &v1alpha1.ClusterServiceVersion{}
	if err := r.live.Get(ctx, key, live); err != nil {
		return false, client404(err, "reading CSV "+key.String())
	}
	if isCopied(live) || !live.Spec.Cleanup.Enabled || !hasFinalizer(live) || isReplacedByPhase(live) {
		return false, nil
	}
	s, err := liveSuccessor(ctx, r.live, live, false)
	return s == nil, err
}

// releaseRBAC removes RBACFinalizer from the CSV's OLM-made RBAC. Objects already deleted then go away;
// the others stay OLM's as before.
func (r *Reconciler) releaseRBAC(ctx context.Context, key types.NamespacedName) error {
	objs, err := r.rbacOf(ctx, key)
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

// finalizerRefusedWhileDeleting is how the API server refuses a new finalizer on an object being deleted
// (a field error inside an Invalid status, not a Forbidden one).
const finalizerRefusedWhileDeleting = "no new finalizers can be added if the object is being deleted"

// patchRBACFinalizer adds or removes RBACFinalizer with a strategic merge patch of metadata.finalizers
// alone (a merge into the list, or a $deleteFromPrimitiveList directive) and no resourceVersion: the API
// server applies it to the current object, so only the finalizers differ and its RBAC escalation check
// does not apply. A patch carrying a stale resourceVersion is judged against the object it read and is
// refused as "attempting to grant RBAC permissions not currently held" (../shared/notes).
func (r *Reconciler) patchRBACFinalizer(ctx context.Context, obj client.Object, hold bool) error {
	directive := "$deleteFromPrimitiveList/finalizers"
	if hold {
		directive = "finalizers"
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{directive: []string{RBACFinalizer}}})
	if err != nil {
		return err
	}
	target := obj.DeepCopyObject().(client.Object)
	err = r.client.Patch(ctx, target, client.RawPatch(types.StrategicMergePatchType, data))
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case hold && err != nil && strings.Contains(err.Error(), finalizerRefusedWhileDeleting):
		// Deleted since the cache saw it: no finalizer can be added any more, nothing to hold.
		log.FromContext(ctx).V(1).Info("RBAC already being deleted, not held", "kind", fmt.Sprintf("%T", obj), "name", obj.GetName())
		return nil
	case err != nil:
		verb := "releasing"
		if hold {
			verb = "holding"
		}
		return fmt.Errorf("%s %T %s: %w", verb, obj, client.ObjectKeyFromObject(obj), err)
	}
	log.FromContext(ctx).V(1).Info("RBAC finalizer", "hold", hold, "kind", fmt.Sprintf("%T", obj), "name", client.ObjectKeyFromObject(obj).String())
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
