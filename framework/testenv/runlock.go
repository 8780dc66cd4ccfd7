package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

// A shared cluster (kind, existing) serves several runs at once — the test binaries of `go test ./...`,
// the suites and example consumers of `make e2e` — as long as none of them changes what the others
// stand on. The cluster's run lock (a flock, so a run that dies releases it) says who may:
//
//   - A run holds the cluster shared from Start to Stop: its specs run beside other runs' specs (the
//     spec library gives each case its own namespaces and samples, and the leftovers check only blames
//     an installation for what is linked to it).
//   - A run holds the cluster alone (no other run's specs in flight) while it does what could break
//     them: for the whole run when Start must install part of the stack (what it installs it also
//     removes at Stop, and an install such as the ClusterOperator CRD changes how OLM restarts); while
//     Stop removes what the run installed or left (the footprint) or deletes the cluster; and for each
//     spec that acts on the whole cluster (Env.Alone: Ginkgo's Serial specs, e.g. an AllNamespaces
//     cleanup or a spec that stops OLM).
//
// The safety invariant, checked by TestRunLockRandomizedRunsNeverOverlapAnAloneSection: while a run is
// alone, no other run is in a shared section. A run waiting to be alone stops new runs from starting
// (a turnstile), so a stream of shared runs cannot starve it. Ginkgo's other processes of the same run
// Connect without the lock: process 1 holds it for them, and runs the Serial specs.

// runLockPath is the lock of the cluster in.ProviderName() would use: a kind cluster by its name, an
// existing one by its kubeconfig and context.
func runLockPath(in Input) string {
	dir := filepath.Join(os.TempDir(), "cleanup-e2e-kind")
	if in.ProviderName() == "kind" {
		return filepath.Join(dir, KindClusterName()+".run.lock")
	}
	h := sha256.Sum256([]byte(os.Getenv("KUBECONFIG") + "\x00" + envvar.KubeContext.Get()))
	return filepath.Join(dir, "existing-"+hex.EncodeToString(h[:])[:16]+".run.lock")
}

// lockPoll is how often a waiting run tries the lock again: polling lets a wait end with its context.
var lockPoll = 100 * time.Millisecond

// runLocks is a process's view of the run locks: a flock conflicts with every other open of the file,
// the same process's too, so the runs of one process (test functions that each start an Env, in
// parallel) share one open file per lock and coordinate among themselves here. A test makes several
// runLocks to play several processes.
type runLocks struct {
	mu    sync.Mutex
	paths map[string]*processLock
}

var processLocks = &runLocks{paths: map[string]*processLock{}}

// processLock is one process's hold of one run lock and its runs on it.
type processLock struct {
	path string
	mu   sync.Mutex
	cond *sync.Cond
	f    *os.File // open while holds > 0; flock shared, or exclusive while alone
	// holds: the process's runs on the cluster; busy: those of them in a shared section (not waiting to
	// be alone); alone: one of them is alone now.
	holds, busy int
	alone       bool
}

// runHold is one run's hold on its cluster.
type runHold struct {
	p    *processLock
	log  logr.Logger
	once sync.Once
	// aloneToEnd: the run became alone for the rest of the run (Start installed part of the stack).
	aloneToEnd bool
}

// lockRun starts a run on the cluster whose lock is path: shared, waiting while a run is alone (saying
// so: a wait of minutes would otherwise look like a hang).
func (l *runLocks) lockRun(ctx context.Context, path string, log logr.Logger) (*runHold, error) {
	l.mu.Lock()
	p, ok := l.paths[path]
	if !ok {
		p = &processLock{path: path}
		p.cond = sync.NewCond(&p.mu)
		l.paths[path] = p
	}
	l.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.alone { // another run of this process is alone: wait for it like for another process's
		p.cond.Wait()
	}
	if p.holds == 0 {
		f, err := openLock(path)
		if err != nil {
			return nil, err
		}
		// The turnstile first: a run waiting to be alone holds it, so new runs queue behind it.
		if err := flockWait(ctx, turnstile(path), syscall.LOCK_EX, log, "a run waits to have the shared cluster alone; starting after it", func(t *os.File) error {
			defer unlockFile(t)
			return flockWait(ctx, f, syscall.LOCK_SH, log, "another run has the shared cluster alone (installing, removing what it installed, or a spec that acts on the whole cluster); waiting for it", nil)
		}); err != nil {
			f.Close()
			return nil, err
		}
		p.f = f
	}
	p.holds++
	p.busy++
	return &runHold{p: p, log: log}, nil
}

// alone waits until no other run is in a shared section, this process's included, and returns to the
// shared hold with back. why says in the log what the run needs the cluster alone for.
func (r *runHold) alone(ctx context.Context, why string) (back func(), err error) {
	p := r.p
	stop := context.AfterFunc(ctx, func() { p.mu.Lock(); p.cond.Broadcast(); p.mu.Unlock() })
	defer stop()
	p.mu.Lock()
	p.busy--
	for (p.busy > 0 || p.alone) && ctx.Err() == nil {
		p.cond.Wait()
	}
	if err := ctx.Err(); err != nil {
		for p.alone { // back to shared, which waits for another run of the process that is alone
			p.cond.Wait()
		}
		p.busy++
		p.cond.Broadcast()
		p.mu.Unlock()
		return nil, err
	}
	p.alone = true
	p.mu.Unlock()
	// The other processes. The shared hold is dropped before queueing at the turnstile: two runs that
	// both want to be alone would otherwise each hold what the other waits for.
	_ = syscall.Flock(int(p.f.Fd()), syscall.LOCK_UN)
	err = flockWait(ctx, turnstile(p.path), syscall.LOCK_EX, r.log, "another run waits to have the shared cluster alone; waiting for it to be done ("+why+")", func(t *os.File) error {
		defer unlockFile(t)
		return flockWait(ctx, p.f, syscall.LOCK_EX, r.log, "other runs use the shared cluster; waiting for them to end ("+why+")", nil)
	})
	if err != nil {
		r.share()
		return nil, err
	}
	r.log.Info("has the shared cluster alone", "for", why)
	return sync.OnceFunc(r.share), nil
}

// share ends an alone section (or a failed wait for one): back to the shared hold.
func (r *runHold) share() {
	p := r.p
	_ = flockWait(context.Background(), p.f, syscall.LOCK_SH, r.log, "", nil)
	p.mu.Lock()
	p.alone = false
	p.busy++
	p.cond.Broadcast()
	p.mu.Unlock()
}

// aloneToTheEnd makes the rest of the run alone (Start found part of the stack missing); release ends it.
func (r *runHold) aloneToTheEnd(ctx context.Context, why string) error {
	if _, err := r.alone(ctx, why); err != nil {
		return err
	}
	r.aloneToEnd = true
	return nil
}

// release ends the run; with fn, fn runs alone first (Stop removing what the run installed). A run that
// is alone to the end runs fn as it is. Idempotent: the second call does nothing.
func (r *runHold) release(ctx context.Context, why string, fn func() error) (err error) {
	r.once.Do(func() {
		if fn != nil && !r.aloneToEnd {
			if _, err = r.alone(ctx, why); err != nil {
				err = fmt.Errorf("wait to have the shared cluster alone (%s): %w", why, err)
				fn = nil // not alone: removing now could break other runs' specs
			} else {
				r.aloneToEnd = true
			}
		}
		if fn != nil {
			err = fn()
		}
		p := r.p
		p.mu.Lock()
		defer p.mu.Unlock()
		p.holds--
		if r.aloneToEnd {
			p.alone = false
		} else {
			p.busy--
		}
		switch {
		case p.holds == 0:
			unlockFile(p.f)
			p.f = nil
		case r.aloneToEnd: // the process's other runs go on shared
			_ = flockWait(context.Background(), p.f, syscall.LOCK_SH, r.log, "", nil)
		}
		p.cond.Broadcast()
	})
	return err
}

// turnstile is the file a run waiting to be alone holds, so that no new run starts meanwhile.
func turnstile(path string) string { return path + ".turnstile" }

func openLock(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
}

// flockWait takes how (LOCK_SH, LOCK_EX) on f — a path opens it, and fn runs while it is held, then
// it is released — polling so that ctx can end the wait. It logs waiting when it has to wait, and how
// long it waited.
func flockWait[F *os.File | string](ctx context.Context, f F, how int, log logr.Logger, waiting string, fn func(*os.File) error) error {
	var file *os.File
	switch v := any(f).(type) {
	case *os.File:
		file = v
	case string:
		var err error
		if file, err = openLock(v); err != nil {
			return err
		}
		defer file.Close()
	}
	start := time.Now()
	logged := false
	for {
		err := syscall.Flock(int(file.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("lock %s: %w", file.Name(), err)
		}
		if !logged && waiting != "" {
			log.Info(waiting, "lock", file.Name())
			logged = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lock %s: still held by another run after %s: %w", file.Name(), time.Since(start).Round(time.Second), ctx.Err())
		case <-time.After(lockPoll):
		}
	}
	if logged {
		log.Info("got the lock", "lock", file.Name(), "waited", time.Since(start).Round(time.Second).String())
	}
	if fn != nil {
		return fn(file)
	}
	return nil
}

// lockFile opens path and takes its exclusive flock, waiting as long as it takes; when another process
// holds it, it logs waiting and how long it waited. Release it with unlockFile; a process that dies
// releases it too.
func lockFile(path string, log logr.Logger, waiting string) (*os.File, error) {
	f, err := openLock(path)
	if err != nil {
		return nil, err
	}
	if err := flockWait(context.Background(), f, syscall.LOCK_EX, log, waiting, nil); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func unlockFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}
