package operandcleanup

import (
	"context"
	"fmt"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// operand is one custom resource found during cleanup (metadata only).
type operand struct {
	gvk        schema.GroupVersionKind
	namespace  string
	name       string
	uid        types.UID
	deleting   bool
	finalizers []string
}

func (o operand) String() string {
	gk := schema.GroupKind{Group: o.gvk.Group, Kind: o.gvk.Kind}
	if o.namespace == "" {
		return fmt.Sprintf("%s %s", gk, o.name)
	}
	return fmt.Sprintf("%s %s/%s", gk, o.namespace, o.name)
}

func metadataList(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// listNamespaces returns the namespaces to list a type in: nil means one cluster-wide list.
func listNamespaces(p *plan, t operandType) []string {
	if !t.namespaced || p.targets.all {
		return nil
	}
	return p.targets.namespaces
}

// listOperands lists the plan's operands from the metadata cache; the informer of a type is created on
// first use and must sync within InformerSyncTimeout.
func (r *Reconciler) listOperands(ctx context.Context, p *plan) ([]operand, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.InformerSyncTimeout)
	defer cancel()
	var out []operand
	for _, t := range p.types {
		nss := listNamespaces(p, t)
		if nss == nil {
			nss = []string{""}
		}
		for _, ns := range nss {
			l := metadataList(t.gvk)
			var opts []client.ListOption
			if ns != "" {
				opts = append(opts, client.InNamespace(ns))
			}
			opts = append(opts, client.UnsafeDisableDeepCopy)
			if err := r.cache.List(ctx, l, opts...); err != nil {
				return nil, fmt.Errorf("listing %s in %q: %w", t.gvk.GroupKind(), ns, err)
			}
			for i := range l.Items {
				m := &l.Items[i]
				// The cache is cluster-wide: keep only what the plan allows (e.g. a namespaced list of a
				// global operator still holds only real namespaces).
				if p.allows(t.gvk.GroupKind(), m.Namespace) != nil {
					continue
				}
				out = append(out, operand{gvk: t.gvk, namespace: m.Namespace, name: m.Name, uid: m.UID,
					deleting: !m.DeletionTimestamp.IsZero(), finalizers: append([]string(nil), m.Finalizers...)})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return lessOperand(out[i], out[j]) })
	return out, nil
}

func lessOperand(a, b operand) bool {
	if a.gvk.Group != b.gvk.Group {
		return a.gvk.Group < b.gvk.Group
	}
	if a.gvk.Kind != b.gvk.Kind {
		return a.gvk.Kind < b.gvk.Kind
	}
	if a.namespace != b.namespace {
		return a.namespace < b.namespace
	}
	return a.name < b.name
}

// anyOperandLive asks the API server (not the cache) whether any operand of the plan still exists. It is
// the last check before the CSV finalizer is removed, so a CR created after the cache's view is not missed.
func (r *Reconciler) anyOperandLive(ctx context.Context, p *plan) (bool, error) {
	for _, t := range p.types {
		nss := listNamespaces(p, t)
		if nss == nil {
			nss = []string{""}
		}
		for _, ns := range nss {
			l := metadataList(t.gvk)
			opts := []client.ListOption{client.Limit(1)}
			if ns != "" {
				opts = append(opts, client.InNamespace(ns))
			}
			if err := r.live.List(ctx, l, opts...); err != nil {
				return false, fmt.Errorf("verifying %s in %q: %w", t.gvk.GroupKind(), ns, err)
			}
			if len(l.Items) > 0 || l.Continue != "" {
				return true, nil
			}
		}
	}
	return false, nil
}

// deleteOperands issues Delete for every operand not yet being deleted, bounded by the controller-wide
// semaphore. It returns the operands confirmed gone (NotFound) so they are not reported as pending.
func (r *Reconciler) deleteOperands(ctx context.Context, p *plan, ops []operand) (gone map[types.UID]bool, err error) {
	gone = map[types.UID]bool{}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for _, o := range ops {
		if o.deleting {
			continue
		}
		if verr := p.allows(o.gvk.GroupKind(), o.namespace); verr != nil {
			// Never reached with a correct lister; refuse rather than delete outside the plan.
			mu.Lock()
			errs = append(errs, fmt.Errorf("refusing to delete %s: %w", o, verr))
			mu.Unlock()
			continue
		}
		select {
		case r.deleteSem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return gone, ctx.Err()
		}
		wg.Add(1)
		go func(o operand) {
			defer func() { <-r.deleteSem; wg.Done() }()
			derr := r.deleteOne(ctx, o)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case derr == nil:
				metricDeletes.WithLabelValues("deleted").Inc()
			case apierrors.IsNotFound(derr):
				gone[o.uid] = true
				metricDeletes.WithLabelValues("gone").Inc()
			case apierrors.IsConflict(derr):
				// UID precondition failed: the name now belongs to a newer object; the next pass sees it.
				metricDeletes.WithLabelValues("recreated").Inc()
			default:
				metricDeletes.WithLabelValues("error").Inc()
				errs = append(errs, fmt.Errorf("deleting %s: %w", o, derr))
			}
		}(o)
	}
	wg.Wait()
	if len(errs) > 0 {
		return gone, fmt.Errorf("%d delete(s) failed, first: %w", len(errs), errs[0])
	}
	return gone, nil
}

// deleteOne deletes one operand by name, only if it is still the object that was listed (UID precondition).
func (r *Reconciler) deleteOne(ctx context.Context, o operand) error {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(o.gvk)
	m.SetNamespace(o.namespace)
	m.SetName(o.name)
	uid := o.uid
	return r.client.Delete(ctx, m, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
}
