package testenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestRunLockRandomizedRunsNeverOverlapAnAloneSection plays random runs of several processes on one
// run lock — shared work, alone sections, alone waits cut short by their context, releases that remove
// something alone — and checks the invariant of runlock.go on every section entered: while a run is
// alone, no other run is in a shared or alone section. It also fails on a deadlock (every seed must
// finish), naming the seed and the last events. A seed replays the same runs (not the same
// interleaving: that is the scheduler's): CLEANUP_E2E_RUNLOCK_SEED=N.
func TestRunLockRandomizedRunsNeverOverlapAnAloneSection(t *testing.T) {
	old := lockPoll
	lockPoll = 2 * time.Millisecond // the same protocol, polled faster: 40 seeds in seconds
	t.Cleanup(func() { lockPoll = old })
	seeds := make([]uint64, 40)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	if s := strings.TrimSpace(lockSeedEnv()); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CLEANUP_E2E_RUNLOCK_SEED=%q: not a number", s)
		}
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		if report := playRuns(t.TempDir(), seed); report != "" {
			t.Fatalf("seed %d (replay: CLEANUP_E2E_RUNLOCK_SEED=%d go test -run %s ./framework/testenv): %s", seed, seed, t.Name(), report)
		}
	}
}

func lockSeedEnv() string { return os.Getenv("CLEANUP_E2E_RUNLOCK_SEED") }

// lockOp is one step of a random run.
type lockOp struct {
	kind string // "shared", "alone", "alone-cut" (a context that may end the wait), "remove" (release alone)
	d    time.Duration
}

func randomRuns(seed uint64, processes, runs, ops int) [][][]lockOp {
	rng := rand.New(rand.NewPCG(seed, 0x52554e4c4f434b)) // "RUNLOCK"
	kinds := []string{"shared", "shared", "alone", "alone-cut"}
	out := make([][][]lockOp, processes)
	for p := range out {
		out[p] = make([][]lockOp, runs)
		for r := range out[p] {
			for range 1 + rng.IntN(ops) {
				out[p][r] = append(out[p][r], lockOp{kinds[rng.IntN(len(kinds))], time.Duration(rng.IntN(8)) * time.Millisecond})
			}
			if rng.IntN(2) == 0 {
				out[p][r] = append(out[p][r], lockOp{"remove", time.Duration(rng.IntN(8)) * time.Millisecond})
			}
		}
	}
	return out
}

// sections records who is in which section and the first violation of the invariant.
type sections struct {
	mu            sync.Mutex
	shared, alone int
	events        []string
	violation     string
}

func (s *sections) enter(who, kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, who+" enters "+kind)
	if kind == "shared" {
		s.shared++
	} else {
		s.alone++
	}
	if s.violation == "" && (s.alone > 1 || (s.alone == 1 && s.shared > 0)) {
		s.violation = fmt.Sprintf("%s entered %s while %d run(s) were alone and %d shared; events until then: %s",
			who, kind, s.alone-b2i(kind != "shared"), s.shared-b2i(kind == "shared"), tail(s.events))
	}
}

func (s *sections) leave(who, kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, who+" leaves "+kind)
	if kind == "shared" {
		s.shared--
	} else {
		s.alone--
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// playRuns plays seed's runs (3 processes of 2 runs each) and returns what went wrong, or "".
func playRuns(dir string, seed uint64) string {
	path := filepath.Join(dir, "cluster.run.lock")
	plan := randomRuns(seed, 3, 2, 4)
	rec := &sections{}
	var wg sync.WaitGroup
	for p, runs := range plan {
		proc := newProcess()
		for r, ops := range runs {
			who := fmt.Sprintf("p%d/r%d", p, r)
			wg.Go(func() { playRun(proc, path, who, ops, rec) })
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return fmt.Sprintf("deadlock: the runs %v did not finish in 30s; last events: %s", plan, tail(rec.events))
	}
	if rec.violation != "" {
		return fmt.Sprintf("%s (runs %v)", rec.violation, plan)
	}
	return ""
}

func playRun(proc *runLocks, path, who string, ops []lockOp, rec *sections) {
	ctx := context.Background()
	h, err := proc.lockRun(ctx, path, logr.Discard())
	if err != nil {
		rec.mu.Lock()
		rec.violation = who + " could not start: " + err.Error()
		rec.mu.Unlock()
		return
	}
	shared := func(d time.Duration) { rec.enter(who, "shared"); time.Sleep(d); rec.leave(who, "shared") }
	for _, op := range ops {
		switch op.kind {
		case "shared":
			shared(op.d)
		case "alone", "alone-cut":
			actx, cancel := ctx, func() {}
			if op.kind == "alone-cut" {
				actx, cancel = context.WithTimeout(ctx, op.d+time.Millisecond)
			}
			back, err := h.alone(actx, who)
			cancel()
			if err != nil {
				shared(op.d) // still a shared run
				continue
			}
			rec.enter(who, "alone")
			time.Sleep(op.d)
			rec.leave(who, "alone")
			back()
		case "remove":
			_ = h.release(ctx, "remove", func() error { rec.enter(who, "alone"); time.Sleep(op.d); rec.leave(who, "alone"); return nil })
		}
	}
	_ = h.release(ctx, "", nil)
}

func tail(events []string) string {
	if len(events) > 12 {
		events = events[len(events)-12:]
	}
	return strings.Join(events, "; ")
}
