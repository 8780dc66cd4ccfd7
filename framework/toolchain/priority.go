package toolchain

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

// Start priority: which waiting start takes the next free slot. make test starts ≈ 20 control planes in
// its first minute on 2 slots, and the one that waited longest was often the longest package's:
// e2e/cleanup's took ≈ 50 s to be ready, then ran the suite to the end of the run, while
// packages done in a minute had started first. scripts/testbin gives each package's tests the seconds it
// took in its last run as envvar.StartPriority. A waiting start's place in the queue is the time it
// began to wait minus its priority in seconds, and a start leaves the free slots to a live waiter
// whose place is ahead of its own: the long ones first, and no start waits behind later ones longer than
// the difference of their priorities. Best effort: two starts may both see a slot free before either
// queued.

// waitingDir holds a file per waiting start, named "<place>-<pid>-<random>" (place: placeIn's, in
// milliseconds) and flocked by its waiter: a file whose lock can be taken is a dead waiter's.
func waitingDir(slots string) string { return filepath.Join(slots, "waiting") }

// placeIn is the place in the queue of a start of this priority that begins to wait at since.
func placeIn(since time.Time, priority int) int64 { return since.UnixMilli() - int64(priority)*1000 }

// startPriority is this process's priority: envvar.StartPriority, 0 when unset or not a number ≥ 0.
func startPriority() int {
	n, err := strconv.Atoi(envvar.StartPriority.Get())
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// waiter is a start's place in the queue: its file, locked while it waits; leave gives it up (a nil
// waiter has none).
type waiter struct {
	f    *os.File
	name string
}

// queue records a waiting start at this place. Its file is locked before it gets its name, so no
// one sees it unlocked and takes it for a dead waiter's.
func queue(slots string, place int64) *waiter {
	dir := waitingDir(slots)
	if os.MkdirAll(dir, 0o777) != nil {
		return nil
	}
	f, err := os.CreateTemp(dir, ".new-")
	if err != nil {
		return nil
	}
	name := filepath.Join(dir, fmt.Sprintf("%d-%d-%s", place, os.Getpid(), strings.TrimPrefix(filepath.Base(f.Name()), ".new-")))
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX) != nil || os.Rename(f.Name(), name) != nil {
		f.Close()
		_ = os.Remove(f.Name())
		return nil
	}
	return &waiter{f: f, name: name}
}

func (w *waiter) leave() {
	if w == nil {
		return
	}
	_ = os.Remove(w.name)
	w.f.Close()
}

// aheadOf says whether a live start waits at a place ahead of place; it removes the files of dead
// waiters it comes across.
func aheadOf(slots string, place int64) bool {
	dir := waitingDir(slots)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		p, _, ok := strings.Cut(e.Name(), "-")
		other, err := strconv.ParseInt(p, 10, 64)
		if !ok || err != nil || other >= place {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // it left meanwhile
		}
		live := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == syscall.EWOULDBLOCK
		if !live {
			_ = os.Remove(f.Name())
		}
		f.Close()
		if live {
			return true
		}
	}
	return false
}
