package operandcleanup

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
		if err := r.waitSynced(ctx, t.gvk); err != nil {
			return nil, err
		}
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

// waitSynced waits for the metadata informer of gvk to sync, polling more finely than the cache's own
// blocking wait (100ms), which would dominate the latency of small cleanups.
func (r *Reconciler) waitSynced(ctx context.Context, gvk schema.GroupVersionKind) error {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	inf, err := r.cache.GetInformer(ctx, m, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("informer for %s: %w", gvk.GroupKind(), err)
	}
	err = wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) { return inf.HasSynced(), nil })
	if err != nil {
		return fmt.Errorf("metadata informer for %s did not sync: %w", gvk.GroupKind(), err)
	}
	return nil
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
// The per-namespace lists run concurrently under the delete semaphore.
func (r *Reconciler) anyOperandLive(ctx context.Context, p *plan) (bool, error) {
	type query struct {
		t  operandType
		ns string
	}
	var qs []query
	for _, t := range p.types {
		nss := listNamespaces(p, t)
		if nss == nil {
			nss = []string{""}
		}
		for _, ns := range nss {
			qs = append(qs, query{t, ns})
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		found bool
		first error
	)
	for _, q := range qs {
		acquired := false
		select {
		case r.deleteSem <- struct{}{}:
			acquired = true
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			if acquired {
				<-r.deleteSem
			}
			break
		}
		wg.Add(1)
		go func(q query) {
			defer func() { <-r.deleteSem; wg.Done() }()
			l := metadataList(q.t.gvk)
			opts := []client.ListOption{client.Limit(1)}
			if q.ns != "" {
				opts = append(opts, client.InNamespace(q.ns))
			}
			err := r.live.List(ctx, l, opts...)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && first == nil && !found:
				first = fmt.Errorf("verifying %s in %q: %w", q.t.gvk.GroupKind(), q.ns, err)
				cancel()
			case err == nil && (len(l.Items) > 0 || l.Continue != ""):
				found = true
				cancel()
			}
		}(q)
	}
	wg.Wait()
	if found {
		return true, nil
	}
	if first != nil {
		return false, first
	}
	return false, ctx.Err()
}

// deleteOperands issues Delete for every operand not yet being deleted, bounded by the controller-wide
// semaphore. It returns the operands known to be gone (NotFound, or deleted without finalizers) so they
// are not reported as pending.
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
				if len(o.finalizers) == 0 {
					// Background propagation adds no finalizer: without one the object is removed by
					// this very call. (Only status accounting; completion is verified live.)
					gone[o.uid] = true
				}
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
// It goes through the unstructured client: the typed client would fail to decode the response (the
// object itself, when finalizers keep it) for kinds unknown to the scheme.
func (r *Reconciler) deleteOne(ctx context.Context, o operand) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.gvk)
	u.SetNamespace(o.namespace)
	u.SetName(o.name)
	uid := o.uid
	return r.client.Delete(ctx, u, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
}
