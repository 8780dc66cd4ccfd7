package cleanuppass

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AnyLive asks the API server (not a cache) whether any object that keeps the plan's cleanup pending
// (Plan.Counts) still exists. It is the last check before a caller lets the operator go, so a CR created
// after a pass listed its namespace is not missed. Where not every object counts, the list is paged until
// one that counts turns up. The lists run concurrently under Sem.
func (r *Runner) AnyLive(ctx context.Context, p Plan) (bool, error) {
	type query struct {
		t  Type
		ns string
	}
	var qs []query
	for _, t := range p.Types() {
		for _, ns := range p.Namespaces(t) {
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
		case r.Sem <- struct{}{}:
			acquired = true
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			if acquired {
				<-r.Sem
			}
			break
		}
		wg.Add(1)
		go func(q query) {
			defer func() { <-r.Sem; wg.Done() }()
			live, err := r.pendingIn(ctx, p, q.t, q.ns)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil && first == nil && !found:
				first = fmt.Errorf("verifying %s in %q: %w", q.t.GVK.GroupKind(), q.ns, err)
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

// pendingIn reports whether the list of t in ns ("" cluster-wide) holds an object that keeps the cleanup
// pending: one item is enough to answer when every object listed there counts, else it pages.
func (r *Runner) pendingIn(ctx context.Context, p Plan, t Type, ns string) (bool, error) {
	gk := t.GVK.GroupKind()
	limit := int64(1)
	if !p.AllCount(gk, ns) {
		limit = r.pageSize()
	}
	cont := ""
	for {
		l := MetadataList(t.GVK)
		opts := []client.ListOption{client.Limit(limit), client.Continue(cont)}
		if ns != "" {
			opts = append(opts, client.InNamespace(ns))
		}
		if err := r.Live.List(ctx, l, opts...); err != nil {
			return false, err
		}
		for i := range l.Items {
			if m := &l.Items[i]; p.Counts(gk, m.Namespace, !m.DeletionTimestamp.IsZero()) {
				return true, nil
			}
		}
		if cont = l.Continue; cont == "" {
			return false, nil
		}
	}
}
