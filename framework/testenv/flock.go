package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
)

// The flock primitives of the run lock (runlock.go): holds that wait with a context and say what they
// wait for, and the turnstiles.

// lockPoll is how often a waiting run tries a lock again: polling lets a wait end with its context.
var lockPoll = 100 * time.Millisecond

// take holds f (the sections or members lock) as how, recording it in *held. An exclusive hold waits
// holding f's turnstile, and a shared hold of the members lock queues at it first: a run waiting to
// remove keeps new runs out. A shared hold of the sections lock does not queue: a run waiting to be
// alone waits for the runs in flight anyway (they hold their sections from spec to spec), and keeping
// new runs out meanwhile only made them queue too (make e2e on kind: the smoke suite's one Serial spec,
// waiting from the start, kept the example consumers from starting). A hold of another kind is dropped
// first (flock converts that way anyway), so the run holds neither while it waits.
func (p *processLock) take(ctx context.Context, log logr.Logger, f *os.File, held *int, how int, waiting string) error {
	if *held == how {
		return nil
	}
	if *held != 0 {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		*held = 0
	}
	var err error
	if how == syscall.LOCK_EX || f == p.members {
		err = flockQueued(ctx, f, how, log, waiting)
	} else {
		err = flockWait(ctx, f, how, log, waiting, nil)
	}
	if err == nil {
		*held = how
	}
	return err
}

// drop closes the process's locks (its last run ended).
func (p *processLock) drop() {
	for _, f := range []*os.File{p.sections, p.members} {
		if f != nil {
			unlockFile(f)
		}
	}
	p.sections, p.members, p.sectionsHeld, p.membersHeld = nil, nil, 0, 0
}

// flockQueued takes how on f through its turnstile: it queues behind whoever holds the turnstile while
// waiting for f exclusively, and holds it itself while it waits.
func flockQueued(ctx context.Context, f *os.File, how int, log logr.Logger, waiting string) error {
	return flockWait(ctx, turnstile(f.Name()), syscall.LOCK_EX, log, waiting+" (queued behind it)", func(t *os.File) error {
		defer unlockFile(t)
		return flockWait(ctx, f, how, log, waiting, nil)
	})
}

// turnstile is the file a run holds while it waits for path exclusively: others that want it queue
// behind it, and for the members lock so do new runs (take).
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
