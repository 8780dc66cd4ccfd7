package applier

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
)

// tracker is the in-memory State with its persistence; safe for concurrent tasks.
type tracker struct {
	store StateStore

	mu      sync.Mutex
	loaded  bool
	state   State
	deletes map[string]*DeleteRecord // by Resource.Key()
	saveMu  sync.Mutex
}

func (t *tracker) load(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.loaded {
		return nil
	}
	s, err := t.store.Load(ctx)
	if err != nil {
		return err
	}
	t.state = s
	t.deletes = map[string]*DeleteRecord{}
	for i := range s.Deletes {
		d := s.Deletes[i]
		t.deletes[d.Resource.Key()] = &d
	}
	t.loaded = true
	return nil
}

func (t *tracker) get(r payload.Resource) (DeleteRecord, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.deletes[r.Key()]
	if !ok {
		return DeleteRecord{}, false
	}
	return *d, true
}

// set records d and persists the state.
func (t *tracker) set(ctx context.Context, d DeleteRecord) error {
	t.mu.Lock()
	t.deletes[d.Resource.Key()] = &d
	t.mu.Unlock()
	return t.save(ctx)
}

// forget drops the record of r, if any, and persists the state; ended reports whether there was one.
func (t *tracker) forget(ctx context.Context, r payload.Resource) (ended DeleteRecord, found bool, err error) {
	t.mu.Lock()
	d, found := t.deletes[r.Key()]
	if found {
		ended = *d
		delete(t.deletes, r.Key())
	}
	t.mu.Unlock()
	if !found {
		return DeleteRecord{}, false, nil
	}
	return ended, true, t.save(ctx)
}

func (t *tracker) version() (string, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state.Version, t.state.Hash
}

// setVersion records a completed pass: no update is under way after it.
func (t *tracker) setVersion(ctx context.Context, version, hash string) error {
	t.mu.Lock()
	t.state.Version, t.state.Hash, t.state.Target = version, hash, ""
	t.mu.Unlock()
	return t.save(ctx)
}

// gateFrom is the version the Upgradeable precondition compares an update with: the update under
// way, else the last completed version (State.Target).
func (t *tracker) gateFrom() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state.Target != "" {
		return t.state.Target
	}
	return t.state.Version
}

// startUpdate records that an update to version started, before its pass sends any request; it
// saves only a change. Re-applying the completed version ends an update under way (a rollback).
func (t *tracker) startUpdate(ctx context.Context, version string) error {
	t.mu.Lock()
	target := version
	if target == t.state.Version {
		target = ""
	}
	changed := t.state.Target != target
	t.state.Target = target
	t.mu.Unlock()
	if !changed {
		return nil
	}
	return t.save(ctx)
}

// inProgress returns the unverified deletions.
func (t *tracker) inProgress() []DeleteRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []DeleteRecord
	for _, d := range t.deletes {
		if d.InProgress() {
			out = append(out, *d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource.String() < out[j].Resource.String() })
	return out
}

// inProgressNames returns the unverified deletions as sorted Resource strings.
func (t *tracker) inProgressNames() []string {
	var out []string
	for _, d := range t.inProgress() {
		out = append(out, d.Resource.String())
	}
	sort.Strings(out)
	return out
}

func (t *tracker) snapshot() State {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := State{Version: t.state.Version, Hash: t.state.Hash, Target: t.state.Target}
	keys := make([]string, 0, len(t.deletes))
	for k := range t.deletes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.Deletes = append(s.Deletes, *t.deletes[k])
	}
	return s
}

func (t *tracker) save(ctx context.Context) error {
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	return t.store.Save(ctx, t.snapshot())
}

func timePtr(t time.Time) *time.Time { return &t }
