package cleanuppass

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Defaults of a Runner's zero fields.
const (
	// DefaultReverifyEvery bounds the age of the live verification each Delete relies on.
	DefaultReverifyEvery = time.Second
	DefaultPageSize      = 500
	DefaultMaxListed     = 100
	// pagesInFlight is how many pages may have deletes running at once (the next page is being listed meanwhile).
	pagesInFlight = 2
)

// ErrPlanChanged stops a pass whose owner or plan changed since the plan was made.
var ErrPlanChanged = errors.New("the cleanup's owner or its plan changed during the pass")

// ListError is a failed list of one type; a caller watching the type restarts the watch (its version may
// no longer be served).
type ListError struct {
	GK        schema.GroupKind
	Namespace string
	Err       error
}

func (e *ListError) Error() string {
	return fmt.Sprintf("listing %s in %q: %v", e.GK, e.Namespace, e.Err)
}
func (e *ListError) Unwrap() error { return e.Err }

// Runner runs passes. Live and Client are required; Sem bounds the Deletes (and AnyLive's lists) in
// flight and is shared by every pass of a controller.
type Runner struct {
	Live          client.Reader // uncached lists
	Client        client.Client // Deletes (unstructured)
	Sem           chan struct{}
	PageSize      int64         // 0: DefaultPageSize
	ReverifyEvery time.Duration // 0: every Delete re-verifies (DefaultReverifyEvery is the callers' default)
	MaxListed     int           // 0: DefaultMaxListed
	// Record, if set, counts each Delete's outcome: deleted, gone, recreated, error.
	Record func(outcome string)
}

func (r *Runner) record(outcome string) {
	if r.Record != nil {
		r.Record(outcome)
	}
}

func (r *Runner) pageSize() int64 {
	if r.PageSize > 0 {
		return r.PageSize
	}
	return DefaultPageSize
}

func (r *Runner) maxListed() int {
	if r.MaxListed > 0 {
		return r.MaxListed
	}
	return DefaultMaxListed
}

// Result is what a pass leaves pending.
type Result struct {
	Pending  int      // objects still there after the pass's deletes
	First    []Object // the first pending ones in Less order, at most MaxListed
	Deleted  int      // Delete calls that succeeded
	Failed   int      // Delete calls that failed (other than NotFound and a UID conflict)
	FirstErr error
}

// DeleteErr summarizes the failed deletes (nil if none).
func (r Result) DeleteErr() error {
	if r.Failed == 0 {
		return nil
	}
	return fmt.Errorf("%d delete(s) failed, first: %w", r.Failed, r.FirstErr)
}

// page is one list call's objects that the plan counts, or the error that ended the listing.
type page struct {
	ops []Object
	err error
}

// Run lists the plan's objects page by page and deletes those not yet being deleted (after the live
// verification v), bounded by Sem.
func (r *Runner) Run(ctx context.Context, p Plan, v *Verification) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan page, 1) // the next page is listed while this one's deletes run
	go r.listPages(ctx, p, pages)

	var (
		res      Result
		inflight []*PageDeletes
	)
	fold := func(pd *PageDeletes) {
		pd.Wait()
		for i, o := range pd.Ops {
			if pd.Gone[i] {
				continue
			}
			res.Pending++
			if len(res.First) < r.maxListed() {
				res.First = append(res.First, o)
			}
		}
		res.Deleted += pd.Deleted
		if res.Failed == 0 && len(pd.Errs) > 0 {
			res.FirstErr = pd.Errs[0]
		}
		res.Failed += len(pd.Errs)
	}
	abort := func(err error) (Result, error) {
		cancel()
		for _, pd := range inflight {
			pd.Wait()
		}
		return res, err
	}
	for pg := range pages {
		if pg.err != nil {
			return abort(pg.err)
		}
		pd := r.DeletePage(ctx, v, pg.ops)
		inflight = append(inflight, pd)
		if pd.Stop != nil {
			return abort(pd.Stop)
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
	sort.Slice(res.First, func(i, j int) bool { return Less(res.First[i], res.First[j]) })
	return res, nil
}

// listPages sends the plan's objects, page by page, in group/kind, namespace, name order (the API
// server lists in key order), and closes out when done or after the first error.
func (r *Runner) listPages(ctx context.Context, p Plan, out chan<- page) {
	defer close(out)
	send := func(pg page) bool {
		select {
		case out <- pg:
			return true
		case <-ctx.Done():
			return false
		}
	}
	// The order of the pending list (Less), so that the first pending ones listed are its first.
	types := append([]Type(nil), p.Types()...)
	sort.Slice(types, func(i, j int) bool { return Less(Object{GVK: types[i].GVK}, Object{GVK: types[j].GVK}) })
	for _, t := range types {
		gk := t.GVK.GroupKind()
		for _, ns := range p.Namespaces(t) {
			cont := ""
			for {
				l := MetadataList(t.GVK)
				opts := []client.ListOption{client.Limit(r.pageSize()), client.Continue(cont)}
				if ns != "" {
					opts = append(opts, client.InNamespace(ns))
				}
				if err := r.Live.List(ctx, l, opts...); err != nil {
					send(page{err: &ListError{GK: gk, Namespace: ns, Err: err}})
					return
				}
				ops := make([]Object, 0, len(l.Items))
				for i := range l.Items {
					m := &l.Items[i]
					// A list holds more than the plan may delete (other installations' objects, namespaces
					// the operator watched but Deletes may not go to): only what counts is kept.
					deleting := !m.DeletionTimestamp.IsZero()
					if !p.Counts(gk, m.Namespace, deleting) {
						continue
					}
					if w, ok := p.(WaitOnly); ok && w.WaitsOnly(gk) {
						deleting = true
					}
					// One being deleted is only waited for; DeletePage re-checks each against the live plan.
					ops = append(ops, Object{GVK: t.GVK, Namespace: m.Namespace, Name: m.Name, UID: m.UID,
						Deleting: deleting, Finalizers: m.Finalizers})
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

// Verification is a pass's last live re-verification of its plan, renewed once it is Every old: every
// Delete goes out on a verification at most that old, however long a page's Deletes wait for the
// semaphore and the client's rate limit (a page of 500 at 50 requests/s takes ≈ 10 s: checking once a
// page let a Delete go out that long after the plan stopped holding).
type Verification struct {
	Every time.Duration
	// Verify re-reads the owner and its plan live: ok false when they no longer allow the pass.
	Verify func(context.Context) (fresh Plan, ok bool, err error)
	Fresh  Plan
	At     time.Time
}

// Current returns the live plan, verified again if the last verification is too old; ErrPlanChanged
// when the plan no longer holds.
func (v *Verification) Current(ctx context.Context) (Plan, error) {
	if v.Fresh != nil && time.Since(v.At) < v.Every {
		return v.Fresh, nil
	}
	f, ok, err := v.Verify(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrPlanChanged
	}
	v.Fresh, v.At = f, time.Now()
	return f, nil
}

// PageDeletes are the deletes of one page: Gone[i] says Ops[i] is known to be gone. Call Wait before
// reading the results.
type PageDeletes struct {
	Ops     []Object
	Gone    []bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	Deleted int
	Errs    []error
	// Stop ends the pass: the plan no longer holds, or could not be verified.
	Stop error
}

// Wait waits for the page's Deletes.
func (pd *PageDeletes) Wait() { pd.wg.Wait() }

// DeletePage starts a Delete for every object of the page not yet being deleted, each re-checked
// against the live plan right before it goes (v.Current). Stop is set when the plan no longer holds (or
// could not be verified): no Delete of the page went out after.
func (r *Runner) DeletePage(ctx context.Context, v *Verification, ops []Object) *PageDeletes {
	pd := &PageDeletes{Ops: ops, Gone: make([]bool, len(ops))}
	for i, o := range ops {
		if o.Deleting {
			continue
		}
		select {
		case r.Sem <- struct{}{}:
		case <-ctx.Done():
			return pd // the rest stay pending
		}
		fresh, err := v.Current(ctx)
		if err != nil {
			<-r.Sem
			pd.Stop = err
			return pd
		}
		if verr := fresh.Allows(o.GVK.GroupKind(), o.Namespace); verr != nil {
			// Never reached with a correct lister; refuse rather than delete outside the plan.
			pd.mu.Lock()
			pd.Errs = append(pd.Errs, fmt.Errorf("refusing to delete %s: %w", o, verr))
			pd.mu.Unlock()
			<-r.Sem
			continue
		}
		pd.wg.Add(1)
		go func() {
			defer func() { <-r.Sem; pd.wg.Done() }()
			derr := r.deleteOne(ctx, o)
			pd.mu.Lock()
			defer pd.mu.Unlock()
			switch {
			case derr == nil:
				r.record("deleted")
				pd.Deleted++
				// Background propagation adds no finalizer: without one the object is removed by this
				// very call. (Only status accounting; completion is verified live.)
				pd.Gone[i] = len(o.Finalizers) == 0
			case apierrors.IsNotFound(derr):
				pd.Gone[i] = true
				r.record("gone")
			case apierrors.IsConflict(derr):
				// UID precondition failed: the name now belongs to a newer object; the next pass sees it.
				r.record("recreated")
			default:
				r.record("error")
				pd.Errs = append(pd.Errs, fmt.Errorf("deleting %s: %w", o, derr))
			}
		}()
	}
	return pd
}

// deleteOne deletes one object by name, only if it is still the object that was listed (UID
// precondition). It goes through the unstructured client: the typed client would fail to decode the
// response (the object itself, when finalizers keep it) for kinds unknown to the scheme.
func (r *Runner) deleteOne(ctx context.Context, o Object) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.GVK)
	u.SetNamespace(o.Namespace)
	u.SetName(o.Name)
	uid := o.UID
	return r.Client.Delete(ctx, u, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
}
