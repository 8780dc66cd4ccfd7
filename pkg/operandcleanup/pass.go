package operandcleanup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A cleanup pass reads the operands live from the API server, one page (Options.ListPageSize, continue
// tokens) at a time, and deletes as it goes.
// Nothing about operands is cached: an informer would hold every operand of a type for as long as a
// cleanup runs (≈ 0.9 KiB each, 90 MiB at 100,000 CRs), while a pass holds at most a few pages, the
// pending count and the first MaxPendingListed pending operands, whatever the number of CRs.
//
// Safety (invariant 1): a page's deletes are dispatched only after a live re-verification of the CSV and
// its plan (verifyLive) that is at most defaultReverifyEvery old; a changed CSV or plan stops the pass
// before the next page is deleted.
const (
	// defaultReverifyEvery bounds the age of the live verification each Delete relies on.
	defaultReverifyEvery = time.Second
	// pagesInFlight is how many pages may have deletes running at once (the next page is being listed meanwhile).
	pagesInFlight = 2
)

// errPlanChanged stops a pass whose CSV, successors or plan changed since the plan was made.
var errPlanChanged = errors.New("the CSV or its cleanup plan changed during the pass")

// listError is a failed list of one operand type; the type's watch is restarted (its version may no
// longer be served).
type listError struct {
	gk        schema.GroupKind
	namespace string
	err       error
}

func (e *listError) Error() string {
	return fmt.Sprintf("listing %s in %q: %v", e.gk, e.namespace, e.err)
}
func (e *listError) Unwrap() error { return e.err }

// passResult is what a pass leaves pending.
type passResult struct {
	pending  int       // operands still there after the pass's deletes
	first    []operand // the first pending ones in group/kind/namespace/name order, at most MaxPendingListed
	deleted  int       // Delete calls that succeeded
	failed   int       // Delete calls that failed (other than NotFound and a UID conflict)
	firstErr error
}

// deleteErr summarizes the failed deletes (nil if none).
func (r passResult) deleteErr() error {
	if r.failed == 0 {
		return nil
	}
	return fmt.Errorf("%d delete(s) failed, first: %w", r.failed, r.firstErr)
}

// page is one list call's operands that the plan allows, or the error that ended the listing.
type page struct {
	ops []operand
	err error
}

// runPass lists the plan's operands page by page and deletes those not yet being deleted (after the live
// verification), bounded by the controller-wide delete semaphore.
func (r *Reconciler) runPass(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, p *plan) (passResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan page, 1) // the next page is listed while this one's deletes run
	go r.listPages(ctx, p, pages)

	var (
		res      passResult
		inflight []*pageDeletes
	)
	v := &verification{every: r.reverifyEvery, verify: func(ctx context.Context) (*plan, bool, error) { return r.verifyLive(ctx, csv, p) }}
	fold := func(pd *pageDeletes) {
		pd.wg.Wait()
		for i, o := range pd.ops {
			if pd.gone[i] {
				continue
			}
			res.pending++
			if len(res.first) < r.opts.MaxPendingListed {
				res.first = append(res.first, o)
			}
		}
		res.deleted += pd.deleted
		if res.failed == 0 && len(pd.errs) > 0 {
			res.firstErr = pd.errs[0]
		}
		res.failed += len(pd.errs)
	}
	abort := func(err error) (passResult, error) {
		cancel()
		for _, pd := range inflight {
			pd.wg.Wait()
		}
		return res, err
	}
	for pg := range pages {
		if pg.err != nil {
			return abort(pg.err)
		}
		pd := r.deletePage(ctx, v, pg.ops)
		inflight = append(inflight, pd)
		if pd.stop != nil {
			return abort(pd.stop)
		}
		for len(inflight) > pagesInFlight {
			fold(inflight[0])
			inflight = inflight[1:]
		}
	}
	for _, pd := range inflight {
		fold(pd)
	}
	if err := ctx.Err(); err != nil {
		return res, err // the listing stopped early: the counts are incomplete
	}
	sort.Slice(res.first, func(i, j int) bool { return lessOperand(res.first[i], res.first[j]) })
	return res, nil
}

// listPages sends the plan's operands, page by page, in group/kind, namespace, name order (the API
// server lists in key order), and closes out when done or after the first error.
func (r *Reconciler) listPages(ctx context.Context, p *plan, out chan<- page) {
	defer close(out)
	send := func(pg page) bool {
		select {
		case out <- pg:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// The order of the pending list (lessOperand), so that the first pending ones listed are its first.
	types := append([]operandType(nil), p.types...)
	sort.Slice(types, func(i, j int) bool { return lessOperand(operand{gvk: types[i].gvk}, operand{gvk: types[j].gvk}) })
	for _, t := range types {
		gk := t.gvk.GroupKind()
		for _, ns := range listNamespaces(p, t) {
			cont := ""
			for {
				l := metadataList(t.gvk)
				opts := []client.ListOption{client.Limit(r.listLimit()), client.Continue(cont)}
				if ns != "" {
					opts = append(opts, client.InNamespace(ns))
				}
				if err := r.live.List(ctx, l, opts...); err != nil {
					send(page{err: &listError{gk: gk, namespace: ns, err: err}})
					return
				}
				ops := make([]operand, 0, len(l.Items))
				for i := range l.Items {
					m := &l.Items[i]
					// A cluster-wide list of a global operator's type also holds what other installations serve,
					// and the namespaces listed are where the operator watched when the uninstall began, not all
					// of which the plan may delete in.
					deleting := !m.DeletionTimestamp.IsZero()
					if !p.counts(gk, m.Namespace, deleting) {
						continue
					}
					// One being deleted is only waited for; one the plan may not delete is never sent a Delete
					// (deletePage also re-checks each against the live plan).
					ops = append(ops, operand{gvk: t.gvk, namespace: m.Namespace, name: m.Name, uid: m.UID,
						deleting: deleting, finalizers: m.Finalizers})
				}
				if len(ops) > 0 && !send(page{ops: ops}) {
					return
				}
				if cont = l.Continue; cont == "" {
					break
				}
			}
		}
	}
}

func (r *Reconciler) listLimit() int64 {
	if r.pageSize > 0 {
		return r.pageSize
	}
	return DefaultListPageSize
}

// pageDeletes are the deletes of one page: gone[i] says ops[i] is known to be gone.
type pageDeletes struct {
	ops     []operand
	gone    []bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	deleted int
	errs    []error
	// stop ends the pass: the plan no longer holds, or could not be verified.
	stop error
}

// verification is the pass's last live re-verification of its plan (verifyLive), renewed once it is
// reverifyEvery old: every Delete goes out on a verification at most that old, however long a page's
// Deletes wait for the semaphore and the client's rate limit (a page of 500 at 50 requests/s takes
// ≈ 10 s: checking once a page let a Delete go out that long after a successor appeared).
type verification struct {
	every  time.Duration
	verify func(context.Context) (*plan, bool, error) // Reconciler.verifyLive of the pass's CSV and plan
	fresh  *plan
	at     time.Time
}

// current returns the live plan, verified again if the last verification is too old; errPlanChanged
// when the CSV, its successors, targets or CRDs no longer allow the plan.
func (v *verification) current(ctx context.Context) (*plan, error) {
	if v.fresh != nil && time.Since(v.at) < v.every {
		return v.fresh, nil
	}
	f, ok, err := v.verify(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errPlanChanged
	}
	v.fresh, v.at = f, time.Now()
	return f, nil
}

// deletePage starts a Delete for every operand of the page not yet being deleted, each re-checked
// against the live plan right before it goes (v.current); wait on wg before reading the results. stop
// is set when the plan no longer holds (or could not be verified): no Delete of the page went out after.
func (r *Reconciler) deletePage(ctx context.Context, v *verification, ops []operand) *pageDeletes {
	pd := &pageDeletes{ops: ops, gone: make([]bool, len(ops))}
	for i, o := range ops {
		if o.deleting {
			continue
		}
		select {
		case r.deleteSem <- struct{}{}:
		case <-ctx.Done():
			return pd // the rest stay pending
		}
		fresh, err := v.current(ctx)
		if err != nil {
			<-r.deleteSem
			pd.stop = err
			return pd
		}
		if verr := fresh.allows(o.gvk.GroupKind(), o.namespace); verr != nil {
			// Never reached with a correct lister; refuse rather than delete outside the plan.
			pd.mu.Lock()
			pd.errs = append(pd.errs, fmt.Errorf("refusing to delete %s: %w", o, verr))
			pd.mu.Unlock()
			<-r.deleteSem
			continue
		}
		pd.wg.Add(1)
		go func() {
			defer func() { <-r.deleteSem; pd.wg.Done() }()
			derr := r.deleteOne(ctx, o)
			pd.mu.Lock()
			defer pd.mu.Unlock()
			switch {
			case derr == nil:
				metricDeletes.WithLabelValues("deleted").Inc()
				pd.deleted++
				// Background propagation adds no finalizer: without one the object is removed by this
				// very call. (Only status accounting; completion is verified live.)
				pd.gone[i] = len(o.finalizers) == 0
			case apierrors.IsNotFound(derr):
				pd.gone[i] = true
				metricDeletes.WithLabelValues("gone").Inc()
			case apierrors.IsConflict(derr):
				// UID precondition failed: the name now belongs to a newer object; the next pass sees it.
				metricDeletes.WithLabelValues("recreated").Inc()
			default:
				metricDeletes.WithLabelValues("error").Inc()
				pd.errs = append(pd.errs, fmt.Errorf("deleting %s: %w", o, derr))
			}
		}()
	}
	return pd
}
