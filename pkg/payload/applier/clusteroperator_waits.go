package applier

import (
	"sync"
	"time"
)

// coWaitStarts remembers when the applier began waiting on each payload ClusterOperator, across
// passes, until its task succeeds: the degraded grace runs from there, like the CVO's
// COUpdateStartTimes (pkg/payload/task.go), and like it is not persisted.
type coWaitStarts struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// start returns when the wait on name began, recording now if it had not.
func (w *coWaitStarts) start(name string, now time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]time.Time{}
	}
	if t, ok := w.m[name]; ok {
		return t
	}
	w.m[name] = now
	return now
}

func (w *coWaitStarts) end(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, name)
}
