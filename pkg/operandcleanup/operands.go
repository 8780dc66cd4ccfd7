package operandcleanup

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// listNamespaces returns the namespaces to list a type in ("" is one cluster-wide list): those the
// operator watched when the uninstall began, a superset of where the plan may delete.
func listNamespaces(p *plan, t operandType) []string {
	if !t.namespaced || p.started.all {
		return []string{""}
	}
	return p.started.namespaces
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
// the last check before the CSV finalizer is removed, so a CR created after a pass listed its namespace is
// not missed. It counts only what keeps the cleanup pending (plan.counts), as the pass does: an operand another
// installation also serves stays by design (sharedOperands), and counting it kept the CSV waiting for
// ever, with nothing pending to say why. A namespace an exclusion covers is not listed; a cluster-wide
// list of a type with exclusions is paged until an allowed operand turns up.
// The lists run concurrently under the delete semaphore.
func (r *Reconciler) anyOperandLive(ctx context.Context, p *plan) (bool, error) {
	type query struct {
		t  operandType
		ns string
	}
	var qs []query
	for _, t := range p.types {
		for _, ns := range listNamespaces(p, t) {
			if ns != "" && p.excluded[t.gvk.GroupKind()].covers(ns) {
				continue
			}
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
			live, err := r.pendingOperandIn(ctx, p, q.t, q.ns)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && first == nil && !found:
				first = fmt.Errorf("verifying %s in %q: %w", q.t.gvk.GroupKind(), q.ns, err)
				cancel()
			case err == nil && live:
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

// pendingOperandIn reports whether the list of t in ns ("" cluster-wide) holds an operand that keeps the
// cleanup pending (plan.counts): one item is enough to answer when every operand listed there counts,
// else it pages.
func (r *Reconciler) pendingOperandIn(ctx context.Context, p *plan, t operandType, ns string) (bool, error) {
	gk := t.gvk.GroupKind()
	limit := int64(1)
	everyOneCounts := p.excluded[gk] == nil && ((ns == "" && p.targets.all) || (ns != "" && p.targets.contains(ns)))
	if !everyOneCounts {
		limit = r.listLimit()
	}
	cont := ""
	for {
		l := metadataList(t.gvk)
		opts := []client.ListOption{client.Limit(limit), client.Continue(cont)}
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := r.live.List(ctx, l, opts...); err != nil {
			return false, err
		}
		for i := range l.Items {
			if m := &l.Items[i]; p.counts(gk, m.Namespace, !m.DeletionTimestamp.IsZero()) {
				return true, nil
			}
		}
		if cont = l.Continue; cont == "" {
			return false, nil
		}
	}
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
