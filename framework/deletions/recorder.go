// Package deletions records every deletion of the objects of a resource, cluster-wide, as the API server
// reports it: the first time each object (by UID) is seen with a deletionTimestamp, or removed. Safety
// tests of deleting code (an uninstall, a cleanup controller) judge the record against what was allowed
// at the time instead of listing expected outcomes by hand.
//
// Events of one watch arrive in resourceVersion order, so a Barrier (an object the test creates and waits
// to see) orders the record with the test's own steps: every deletion before it is recorded once it is
// seen. Stamp labels each deletion with the test's current step.
package deletions

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// Deletion is one recorded deletion.
type Deletion struct {
	UID       types.UID
	Namespace string
	Name      string
	// Finalizers the object carried when its deletion was first seen.
	Finalizers []string
	// Step is the value of the last Stamp call when the deletion was seen.
	Step int
	// At is when the recorder saw it.
	At time.Time
}

func (d Deletion) String() string {
	if d.Namespace == "" {
		return d.Name
	}
	return d.Namespace + "/" + d.Name
}

// Recorder watches one resource. Start it before the steps it judges.
type Recorder struct {
	mu        sync.Mutex
	step      int
	seen      map[types.UID]bool
	deletions []Deletion
	created   map[string]bool // namespace/name of every object seen created, for Barrier
	stop      func()
	done      chan struct{}
	err       error
}

// Start watches resource gvr in every namespace with cfg.
func Start(ctx context.Context, cfg *rest.Config, gvr schema.GroupVersionResource) (*Recorder, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	w, err := dyn.Resource(gvr).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("watching %s to record deletions: %w", gvr, err)
	}
	r := &Recorder{seen: map[types.UID]bool{}, created: map[string]bool{}, stop: w.Stop, done: make(chan struct{})}
	go r.run(w)
	return r, nil
}

func (r *Recorder) run(w watch.Interface) {
	defer close(r.done)
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			r.mu.Lock()
			r.err = fmt.Errorf("watch error: %v", ev.Object)
			r.mu.Unlock()
			continue
		}
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		r.mu.Lock()
		switch {
		case ev.Type == watch.Added:
			r.created[u.GetNamespace()+"/"+u.GetName()] = true
		case ev.Type == watch.Deleted || (ev.Type == watch.Modified && u.GetDeletionTimestamp() != nil):
			if !r.seen[u.GetUID()] {
				r.seen[u.GetUID()] = true
				r.deletions = append(r.deletions, Deletion{UID: u.GetUID(), Namespace: u.GetNamespace(), Name: u.GetName(),
					Finalizers: u.GetFinalizers(), Step: r.step, At: time.Now()})
			}
		}
		r.mu.Unlock()
	}
}

// Stamp sets the step recorded with the deletions seen from now on.
func (r *Recorder) Stamp(step int) {
	r.mu.Lock()
	r.step = step
	r.mu.Unlock()
}

// Barrier waits until the recorder has seen the creation of namespace/name (an object the caller just
// created): every deletion that happened before that creation has then been recorded. timeout ≤ 0 is
// the request interval: a watch event follows the write within a moment.
func (r *Recorder) Barrier(ctx context.Context, namespace, name string, timeout time.Duration) error {
	var watchErr error
	// Every 5 ms: the check reads memory only, and callers wait on it between steps of a sequence.
	err := intervals.Wait(ctx, intervals.Request, func() (bool, string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if watchErr = r.err; watchErr != nil {
			return true, ""
		}
		return r.created[namespace+"/"+name], "no creation event yet (watch lagging)"
	}, intervals.Within(timeout), intervals.Every(5*time.Millisecond))
	if err == nil {
		err = watchErr
	}
	if err != nil {
		return fmt.Errorf("deletion recorder never saw %s/%s created (its watch closed or lags): %w", namespace, name, err)
	}
	return nil
}

// Since returns the deletions recorded after the first n.
func (r *Recorder) Since(n int) []Deletion {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n > len(r.deletions) {
		return nil
	}
	return append([]Deletion(nil), r.deletions[n:]...)
}

// Stop ends the watch.
func (r *Recorder) Stop() {
	r.stop()
	<-r.done
}
