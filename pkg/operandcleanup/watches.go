package operandcleanup

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// operandWatches keeps one metadata-only informer per operand GroupKind for as long as at least one CSV is
// being cleaned up with it, and maps operand create/delete events to those CSVs. Nothing about operands
// is cached while no cleanup runs.
type operandWatches struct {
	cache cache.Cache

	mu   sync.Mutex
	ctrl controller.Controller
	// byGK holds the watched version and the CSVs (with their plans) interested in each GroupKind.
	byGK map[schema.GroupKind]*gkWatch
	// byCSV is the reverse index, for untrack.
	byCSV map[types.NamespacedName][]schema.GroupKind
}

type gkWatch struct {
	gvk  schema.GroupVersionKind
	csvs map[types.NamespacedName]*plan
}

func newOperandWatches(c cache.Cache) *operandWatches {
	return &operandWatches{cache: c, byGK: map[schema.GroupKind]*gkWatch{}, byCSV: map[types.NamespacedName][]schema.GroupKind{}}
}

func (w *operandWatches) setController(c controller.Controller) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ctrl = c
}

// track registers the CSV's plan and starts watches for GroupKinds not yet watched. A GroupKind already
// watched at another served version keeps that version: the plan is rewritten to use it, so there is a
// single informer per resource.
func (w *operandWatches) track(key types.NamespacedName, p *plan) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.untrackLocked(key, false)
	var gks []schema.GroupKind
	for i := range p.types {
		gk := p.types[i].gvk.GroupKind()
		gw, ok := w.byGK[gk]
		if !ok {
			gw = &gkWatch{gvk: p.types[i].gvk, csvs: map[types.NamespacedName]*plan{}}
			if err := w.startLocked(gw.gvk); err != nil {
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

// untrack forgets the CSV and stops the informers nobody needs any more.
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

// reset drops the informer of a GroupKind (e.g. after a list error, when its version may have stopped
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
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gw.gvk)
	if w.cache != nil { // nil only in unit tests of the bookkeeping
		_ = w.cache.RemoveInformer(context.Background(), m)
	}
	delete(w.byGK, gk)
}

func (w *operandWatches) startLocked(gvk schema.GroupVersionKind) error {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	// Create the informer synchronously so that stopLocked always finds (and removes) it.
	inf, err := w.cache.GetInformer(context.Background(), m, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	gk := gvk.GroupKind()
	h := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
		return w.requestsFor(gk, o.GetNamespace())
	})
	// Only existence matters for cleanup: creates (a new CR in a target) and deletes (progress).
	onlyCreateDelete := predicate.TypedFuncs[*metav1.PartialObjectMetadata]{
		UpdateFunc:  func(event.TypedUpdateEvent[*metav1.PartialObjectMetadata]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[*metav1.PartialObjectMetadata]) bool { return false },
	}
	return w.ctrl.Watch(&source.TypedInformer[*metav1.PartialObjectMetadata, reconcile.Request]{
		Informer: inf, Handler: h, Predicates: []predicate.TypedPredicate[*metav1.PartialObjectMetadata]{onlyCreateDelete},
	})
}

// requestsFor returns the CSVs whose cleanup covers an operand of gk in namespace ns.
func (w *operandWatches) requestsFor(gk schema.GroupKind, ns string) []reconcile.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	gw := w.byGK[gk]
	if gw == nil {
		return nil
	}
	var out []reconcile.Request
	for key, p := range gw.csvs {
		if p.allows(gk, ns) == nil {
			out = append(out, reconcile.Request{NamespacedName: key})
		}
	}
	return out
}

// tracked reports the GroupKinds with a running informer (tests, metrics).
func (w *operandWatches) tracked() []schema.GroupKind {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]schema.GroupKind, 0, len(w.byGK))
	for gk := range w.byGK {
		out = append(out, gk)
	}
	return out
}
