package testenv

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/go-logr/logr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// API locks let a spec that acts on every namespace, but only on some APIs, run beside other runs'
// specs on a shared cluster instead of having the cluster alone (runlock.go's sections lock). An
// AllNamespaces install of an operator is such a spec: its cleanup deletes the kinds its CSV owns in
// every namespace, and OLM lets only one operator provide an API to namespaces that overlap — both
// only matter to specs that use the same kinds.
//
// One flock per cluster and API (kind.group), next to the run lock. Rules:
//   - a spec that installs an operator or makes objects of a kind holds that API shared, from before
//     its namespaces exist until its cleanups ran (specs.Installation);
//   - a spec whose cleanup reaches every namespace holds exclusively, for as long, the APIs whose
//     objects or CRDs it deletes there (the kinds its operator owns), and the others it uses shared;
//   - a spec takes its APIs in one call, in sorted order whatever the mode of each, and takes no other
//     lock while it holds them, so two specs cannot wait for each other;
//   - an exclusive wait holds the API's turnstile, and shared holds queue at it: specs are short, so the
//     exclusive one gets in as soon as the specs in flight end (a stream of them cannot starve it).
//
// Invariant, checked by TestAPILocksRandomizedKeepTheInvariant: while a spec holds an API exclusively,
// no other spec of any process holds it. The runs of one process share one open file per API (a
// flock conflicts with every other open of the file) and follow the same rules among themselves.

// apiLocker is the APILocker of one shared cluster in this process.
type apiLocker struct {
	locks *apiLocks
	// prefix is the run lock's path without ".lock": an API's lock is prefix.api.<api>.lock.
	prefix string
	log    logr.Logger
}

// apiLocks is a process's holds of API locks, by path.
type apiLocks struct {
	mu    sync.Mutex
	paths map[string]*apiLock
}

var processAPILocks = &apiLocks{paths: map[string]*apiLock{}}

// apiLock is one API's lock in this process: the open file while any spec of the process holds it.
type apiLock struct {
	path string
	mu   sync.Mutex
	cond *sync.Cond
	file *os.File
	// shared: the process's specs holding it shared; exclusive: one holds it exclusively; queued:
	// exclusive waits of the process (new shared holds wait behind them, as across processes).
	shared, queued int
	exclusive      bool
}

func newAPILocker(runLock string, log logr.Logger) *apiLocker {
	return &apiLocker{locks: processAPILocks, prefix: strings.TrimSuffix(runLock, ".lock"), log: log}
}

// LockAPIs implements cluster.APILocker: every API of holds in sorted order, each in its own mode, so
// that the order rule holds whatever mix of modes specs ask for.
func (a *apiLocker) LockAPIs(ctx context.Context, holds cluster.APIHolds, why string) (done func(), err error) {
	apis := slices.Concat(holds.Exclusive, holds.Shared)
	slices.Sort(apis)
	apis = slices.Compact(apis)
	type hold struct {
		lock      *apiLock
		exclusive bool
	}
	var held []hold
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].lock.release(held[i].exclusive)
		}
	}
	for _, api := range apis {
		if api == "" || strings.ContainsAny(api, "/\x00") {
			release()
			return nil, fmt.Errorf("lock API %q for %s: want kind.group in lower case, e.g. memcached.cache.example.com", api, why)
		}
		exclusive := slices.Contains(holds.Exclusive, api)
		l := a.locks.get(a.prefix + ".api." + api + ".lock")
		if err := l.acquire(ctx, a.log, exclusive, why); err != nil {
			release()
			return nil, err
		}
		held = append(held, hold{l, exclusive})
	}
	if len(holds.Exclusive) > 0 {
		a.log.Info("holds APIs exclusively (no other run's spec uses them meanwhile)", "exclusive", holds.Exclusive, "shared", holds.Shared, "for", why)
	}
	return sync.OnceFunc(release), nil
}

func (ls *apiLocks) get(path string) *apiLock {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l, ok := ls.paths[path]
	if !ok {
		l = &apiLock{path: path}
		l.cond = sync.NewCond(&l.mu)
		ls.paths[path] = l
	}
	return l
}

func (l *apiLock) acquire(ctx context.Context, log logr.Logger, exclusive bool, why string) error {
	stop := context.AfterFunc(ctx, func() { l.mu.Lock(); l.cond.Broadcast(); l.mu.Unlock() })
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	if exclusive {
		l.queued++
		for (l.shared > 0 || l.exclusive) && ctx.Err() == nil {
			l.cond.Wait()
		}
		l.queued--
	} else {
		for (l.exclusive || l.queued > 0) && ctx.Err() == nil {
			l.cond.Wait()
		}
	}
	if err := ctx.Err(); err != nil {
		l.cond.Broadcast() // a shared hold that waited behind this exclusive wait goes on
		return fmt.Errorf("lock %s for %s: another spec of this process held it: %w", l.path, why, err)
	}
	if l.file == nil { // the process's first hold: take the flock (others of the process wait on l.mu)
		f, err := openLock(l.path)
		if err != nil {
			return err
		}
		how, waiting := syscall.LOCK_SH, "another run's spec uses the API exclusively (an AllNamespaces cleanup); waiting for it"
		if exclusive {
			how, waiting = syscall.LOCK_EX, "other runs' specs use the API; waiting for them to end ("+why+")"
		}
		if err := flockQueued(ctx, f, how, log, waiting); err != nil {
			f.Close()
			l.cond.Broadcast()
			return err
		}
		l.file = f
	}
	if exclusive {
		l.exclusive = true
	} else {
		l.shared++
	}
	return nil
}

func (l *apiLock) release(exclusive bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if exclusive {
		l.exclusive = false
	} else {
		l.shared--
	}
	if !l.exclusive && l.shared == 0 && l.file != nil {
		unlockFile(l.file)
		l.file = nil
	}
	l.cond.Broadcast()
}
