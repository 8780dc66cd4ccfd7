package operandcleanup

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// operandWatches keeps one metadata watch per operand GroupKind for as long as at least one CSV is being
// cleaned up with it, and requeues those CSVs when an operand is created or deleted. A watch only
// triggers a pass; it stores nothing (passes list live, pass.go), so memory does not grow with the
// number of operands.
type operandWatches struct {
	live    client.Reader    // the resourceVersion a watch starts from
	watcher client.WithWatch // nil only in unit tests of the bookkeeping
	restart time.Duration    // pause before re-establishing a watch that ended

	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	// running is the controller's context: every watch ends with it (an open watch would outlive a
	// stopped controller and hold its API server's shutdown).
	running context.Context
	// byGK holds the watched version and the CSVs (with their plans) interested in each GroupKind.
	byGK map[schema.GroupKind]*gkWatch
	// byCSV is the reverse index, for untrack.
	byCSV map[types.NamespacedName][]schema.GroupKind
}

type gkWatch struct {
	gvk  schema.GroupVersionKind
	csvs map[types.NamespacedName]*plan
	stop context.CancelFunc
}

func newOperandWatches(live client.Reader, watcher client.WithWatch) *operandWatches {
	return &operandWatches{live: live, watcher: watcher, restart: time.Second,
		byGK: map[schema.GroupKind]*gkWatch{}, byCSV: map[types.NamespacedName][]schema.GroupKind{}}
}

// source hands the controller's queue and context to the watches once the controller starts.
func (w *operandWatches) source() source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.queue, w.running = q, ctx
		return nil
	})
}

// track registers the CSV's plan and starts watches for GroupKinds not yet watched. A GroupKind already
// watched at another served version keeps that version: the plan is rewritten to use it. A new watch
// starts at the resourceVersion current when track returns, so every operand change after it triggers
// a pass, and the pass that follows lists everything before it.
func (w *operandWatches) track(ctx context.Context, key types.NamespacedName, p *plan) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.untrackLocked(key, false)
	var gks []schema.GroupKind
	for i := range p.types {
		gk := p.types[i].gvk.GroupKind()
		gw, ok := w.byGK[gk]
		if !ok {
			gw = &gkWatch{gvk: p.types[i].gvk, csvs: map[types.NamespacedName]*plan{}}
			if err := w.startLocked(ctx, gw); err != nil {
				w.byCSV[key] = gks
				return err
			}
			w.byGK[gk] = gw
		}
		p.types[i].gvk = gw.gvk
		gw.csvs[key] = p
		gks = append(gks, gk)
	}
	w.byCSV[key] = gks
	for gk, gw := range w.byGK {
		if len(gw.csvs) == 0 {
			w.stopLocked(gk, gw)
		}
	}
	return nil
}

// untrack forgets the CSV and stops the watches nobody needs any more.
func (w *operandWatches) untrack(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.untrackLocked(key, true)
}

func (w *operandWatches) untrackLocked(key types.NamespacedName, stop bool) {
	for _, gk := range w.byCSV[key] {
		gw := w.byGK[gk]
		if gw == nil {
			continue
		}
		delete(gw.csvs, key)
		if len(gw.csvs) == 0 && stop {
			w.stopLocked(gk, gw)
		}
	}
	delete(w.byCSV, key)
}

// reset drops the watch of a GroupKind (e.g. after a list error, when its version may have stopped
// being served); the next track starts a fresh one.
func (w *operandWatches) reset(gk schema.GroupKind) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gw := w.byGK[gk]; gw != nil {
		for key := range gw.csvs {
			kept := w.byCSV[key][:0]
			for _, g := range w.byCSV[key] {
				if g != gk {
					kept = append(kept, g)
				}
			}
			w.byCSV[key] = kept
		}
		w.stopLocked(gk, gw)
	}
}

func (w *operandWatches) stopLocked(gk schema.GroupKind, gw *gkWatch) {
	if gw.stop != nil {
		gw.stop()
	}
	delete(w.byGK, gk)
}

func (w *operandWatches) startLocked(ctx context.Context, gw *gkWatch) error {
	if w.watcher == nil {
		return nil
	}
	if w.running == nil {
		return errors.New("the controller has not started its operand watches")
	}
	rv, err := w.currentVersion(ctx, gw.gvk)
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(w.running)
	gw.stop = stop
	go w.run(log.IntoContext(wctx, log.FromContext(ctx).WithValues("operands", gw.gvk.GroupKind().String())), gw.gvk, rv)
	return nil
}

// currentVersion is the resourceVersion a watch of gvk starts from (a one-item list: no object is sent
// again, unlike a watch without a resourceVersion).
func (w *operandWatches) currentVersion(ctx context.Context, gvk schema.GroupVersionKind) (string, error) {
	l := metadataList(gvk)
	if err := w.live.List(ctx, l, client.Limit(1)); err != nil {
		return "", err
	}
	return l.ResourceVersion, nil
}

// run forwards creates and deletes of gvk to the CSVs concerned until ctx ends. client-go's RetryWatcher
// resumes a dropped connection from the last resourceVersion; when it gives up (e.g. that version was
// compacted away), the watch starts again from now and every CSV of the kind gets a pass, which covers
// what happened in between.
func (w *operandWatches) run(ctx context.Context, gvk schema.GroupVersionKind, rv string) {
	gk := gvk.GroupKind()
	lw := &toolscache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return w.watcher.Watch(ctx, metadataList(gvk), &client.ListOptions{Raw: &o})
	}}
	for {
		if rv != "" {
			rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
			if err == nil {
				w.forward(ctx, gk, rw)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.restart):
		}
		var err error
		if rv, err = w.currentVersion(ctx, gvk); err != nil {
			log.FromContext(ctx).Info("operand watch not re-established; retrying", "error", err.Error())
			rv = ""
			continue
		}
		w.enqueue(w.requestsFor(gk, nil))
	}
}

func (w *operandWatches) forward(ctx context.Context, gk schema.GroupKind, rw *watchtools.RetryWatcher) {
	defer rw.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-rw.ResultChan():
			if !ok {
				return
			}
			switch ev.Type {
			case watch.Added, watch.Deleted: // only existence matters to a cleanup
				if m, err := meta.Accessor(ev.Object); err == nil {
					ns := m.GetNamespace()
					w.enqueue(w.requestsFor(gk, &ns))
				}
			case watch.Error:
				log.FromContext(ctx).Info("operand watch ended", "status", ev.Object)
				return
			}
		}
	}
}

func (w *operandWatches) enqueue(reqs []reconcile.Request) {
	w.mu.Lock()
	q := w.queue
	w.mu.Unlock()
	if q == nil {
		return
	}
	for _, req := range reqs {
		q.Add(req)
	}
}

// requestsFor returns the CSVs whose cleanup covers an operand of gk in namespace *ns (any namespace
// when ns is nil).
func (w *operandWatches) requestsFor(gk schema.GroupKind, ns *string) []reconcile.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	gw := w.byGK[gk]
	if gw == nil {
		return nil
	}
	var out []reconcile.Request
	for key, p := range gw.csvs {
		if ns == nil || p.allows(gk, *ns) == nil {
			out = append(out, reconcile.Request{NamespacedName: key})
		}
	}
	return out
}

// tracked reports the GroupKinds with a running watch (tests, metrics).
func (w *operandWatches) tracked() []schema.GroupKind {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]schema.GroupKind, 0, len(w.byGK))
	for gk := range w.byGK {
		out = append(out, gk)
	}
	return out
}
