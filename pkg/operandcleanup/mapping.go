package operandcleanup

import (
	"context"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// csvChanged passes CSV updates that matter here and drops OLM's periodic status heartbeats.
func csvChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*v1alpha1.ClusterServiceVersion)
			n, ok2 := e.ObjectNew.(*v1alpha1.ClusterServiceVersion)
			if !ok1 || !ok2 {
				return true
			}
			return o.Generation != n.Generation ||
				!o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
				!equality.Semantic.DeepEqual(o.Finalizers, n.Finalizers) ||
				!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
				!equality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
				o.Status.Phase != n.Status.Phase || o.Status.Reason != n.Status.Reason
		},
	}
}

// mapToReplaced enqueues the CSV named by spec.replaces (same namespace).
func mapToReplaced(_ context.Context, obj client.Object) []reconcile.Request {
	csv, ok := obj.(*v1alpha1.ClusterServiceVersion)
	if !ok || csv.Spec.Replaces == "" || isCopied(csv) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: csv.Namespace, Name: csv.Spec.Replaces}}}
}

// mapToSuccessors enqueues the CSVs whose spec.replaces names obj (same namespace, from the cache index).
func (r *Reconciler) mapToSuccessors(ctx context.Context, obj client.Object) []reconcile.Request {
	csv, ok := obj.(*v1alpha1.ClusterServiceVersion)
	if !ok || isCopied(csv) {
		return nil
	}
	succ, err := successors(ctx, r.cache, csv, true)
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(succ))
	for i := range succ {
		out = append(out, reconcile.Request{NamespacedName: keyOf(&succ[i])})
	}
	return out
}

// mapToWaiting enqueues the cleanups blocked on this CSV, another installation OLM had not placed yet:
// its targets set, its phase Failed or its deletion unblocks them at once rather than at the next
// ResyncInterval.
func (r *Reconciler) mapToWaiting(_ context.Context, obj client.Object) []reconcile.Request {
	key := client.ObjectKeyFromObject(obj)
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []reconcile.Request
	for k, s := range r.state {
		if s.waitsOn == key {
			out = append(out, reconcile.Request{NamespacedName: k})
		}
	}
	return out
}

// waitOn records the CSV st's cleanup is blocked on (none: the zero key).
func (r *Reconciler) waitOn(st *csvState, key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st.waitsOn = key
}

// mapOperatorGroup enqueues the CSVs of the namespace that wait on their target namespaces: an
// OperatorGroup appearing or resolving its namespaces unblocks them.
func (r *Reconciler) mapOperatorGroup(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &v1alpha1.ClusterServiceVersionList{}
	if err := r.cache.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if c := &list.Items[i]; isDeleting(c) && hasFinalizer(c) {
			out = append(out, reconcile.Request{NamespacedName: keyOf(c)})
		}
	}
	return out
}

// rbacRelevant passes only RBAC OLM made for CSVs and objects carrying RBACFinalizer.
func rbacRelevant() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return len(olmOwnerKey(obj)) > 0 || len(heldKey(obj)) > 0
	})
}

// mapRBAC enqueues the CSV OLM made an RBAC object for (olm.owner* labels, olmOwnerKey).
func mapRBAC(_ context.Context, obj client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, k := range olmOwnerKey(obj) {
		if ns, name, ok := strings.Cut(k, "/"); ok && ns != "" && name != "" {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		}
	}
	return out
}
