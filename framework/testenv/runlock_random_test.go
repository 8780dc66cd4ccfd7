package testenv

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/cleanup-e2e/cleanup-e2e/internal/seeded"
)

// TestRunLockRandomizedRunsKeepTheInvariants plays random runs of several processes on one cluster —
// sections, alone sections, alone waits cut short by their context, runs with something disruptive
// (disruptive.go), releases that remove something or delete the cluster — and checks the invariants of
// runlock.go on every section entered: while a run is alone, no other run is in a section and no other
// run's disruptive component is there; while a run removes, no other run is alive or removing. It also fails on a deadlock (every seed must finish), naming the seed and
// the events up to it. A seed replays the same runs (not the same interleaving: that is the
// scheduler's, so there is nothing to shrink): CLEANUP_E2E_SEED=N.
func TestRunLockRandomizedRunsKeepTheInvariants(t *testing.T) {
	for seed := range seeds(t, 40) { // ≈ 3 s; each seed plays 6 runs of up to 6 operations
		if report := playRuns(t.TempDir(), seed); report != "" {
			t.Fatalf("seed %d (replay: %s=%d go test -run %s ./framework/testenv): %s", seed, seeded.EnvSeed, seed, t.Name(), report)
		}
	}
}

// seeds are 1..n, or the one internal/seeded's CLEANUP_E2E_SEED names; the locks are polled faster
// meanwhile (the same protocol: many seeds in seconds).
func seeds(t *testing.T, n int) iter.Seq[int64] {
	old := lockPoll
	lockPoll = 2 * time.Millisecond
	t.Cleanup(func() { lockPoll = old })
	cfg, err := seeded.Read(seeded.Config{Seed: 1, Sequences: n})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Seeds()
}

// lockOp is one step of a random run.
type lockOp struct {
	// "disruptive" (first: the run holds something disruptive until it ends), "shared", "alone",
	// "alone-cut" (a context that may end the wait), and last "remove" (what the run installed) or
	// "delete" (the cluster).
	kind string
	d    time.Duration
}

func randomRuns(seed int64, processes, runs, ops int) [][][]lockOp {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x52554e4c4f434b)) // "RUNLOCK"
	kinds := []string{"shared", "shared", "alone", "alone-cut"}
	out := make([][][]lockOp, processes)
	for p := range out {
		out[p] = make([][]lockOp, runs)
		for r := range out[p] {
			if rng.IntN(6) == 0 {
				out[p][r] = append(out[p][r], lockOp{"disruptive", 0})
			}
			for range 1 + rng.IntN(ops) {
				out[p][r] = append(out[p][r], lockOp{kinds[rng.IntN(len(kinds))], time.Duration(rng.IntN(8)) * time.Millisecond})
			}
			switch rng.IntN(5) {
			case 0, 1:
				out[p][r] = append(out[p][r], lockOp{"remove", time.Duration(rng.IntN(8)) * time.Millisecond})
			case 2:
				out[p][r] = append(out[p][r], lockOp{"delete", time.Duration(rng.IntN(8)) * time.Millisecond})
			}
		}
	}
	return out
}

// sections records which runs are alive and in which section, which are alone and which have something
// disruptive on the cluster, and the first violation.
type sections struct {
	mu                   sync.Mutex
	alive, shared, alone int
	removing             int
	// aloneRun is the run that is alone; disruptive, the runs whose disruptive component is there.
	aloneRun   string
	disruptive map[string]bool
	events     []string
	violation  string
}

func (s *sections) record(who, what string, delta int, counter *int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, who+" "+what)
	*counter += delta
	if counter == &s.alone {
		s.aloneRun = map[bool]string{true: who}[delta > 0]
	}
	if s.violation != "" || delta < 0 {
		return
	}
	others := 0 // other runs' disruptive components on the cluster
	for run := range s.disruptive {
		if run != s.aloneRun && s.aloneRun != "" {
			others++
		}
	}
	if bad := (s.alone > 1 || (s.alone == 1 && (s.shared > 0 || others > 0))) ||
		(s.removing > 1 || (s.removing == 1 && (s.alive > 0 || s.shared > 0 || s.alone > 0))); bad {
		s.violation = fmt.Sprintf("%s %s while %d other run(s) were alive, %d in a section, %d alone, %d removing, %d other run(s)' disruptive component there; events until then: %s",
			who, what, s.alive, s.shared, s.alone, s.removing, others, tail(s.events))
	}
}

// disrupt records that who's disruptive component is there (on) or gone.
func (s *sections) disrupt(who string, on bool) {
	s.mu.Lock()
	if on {
		s.disruptive[who] = true
	} else {
		delete(s.disruptive, who)
	}
	s.mu.Unlock()
	s.record(who, map[bool]string{true: "installs its disruptive component", false: "removed its disruptive component"}[on], 0, new(int))
}

// playRuns plays seed's runs (3 processes of 2 runs each) and returns what went wrong, or "".
func playRuns(dir string, seed int64) string {
	path := filepath.Join(dir, "cluster.run.lock")
	plan := randomRuns(seed, 3, 2, 4)
	rec := &sections{disruptive: map[string]bool{}}
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
	rec.record(who, "starts", 1, &rec.alive)
	section := func(kind string, counter *int, d time.Duration) {
		rec.record(who, "enters "+kind, 1, counter)
		time.Sleep(d)
		rec.record(who, "leaves "+kind, -1, counter)
	}
	released, disruptive := false, false
	removeDisruptive := func() { // Env.Stop: first, while the run is still in its section
		if disruptive {
			rec.disrupt(who, false)
			disruptive = false
		}
	}
	for _, op := range ops {
		switch op.kind {
		case "disruptive":
			if err := h.useDisruptive(ctx, who); err != nil {
				panic(err) // no deadline: it cannot fail
			}
			rec.disrupt(who, true)
			disruptive = true
		case "shared":
			section("a section", &rec.shared, op.d)
		case "alone", "alone-cut":
			actx, cancel := ctx, func() {}
			if op.kind == "alone-cut" {
				actx, cancel = context.WithTimeout(ctx, op.d+time.Millisecond)
			}
			back, err := h.alone(actx, who)
			cancel()
			if err != nil {
				section("a section", &rec.shared, op.d) // still in the run
				continue
			}
			section("alone", &rec.alone, op.d)
			back()
		case "remove", "delete":
			removeDisruptive()
			rec.record(who, "ends, to "+op.kind, -1, &rec.alive)
			released = true
			_ = h.release(ctx, op.kind, func() error { section("removing", &rec.removing, op.d); return nil })
		}
	}
	removeDisruptive()
	if !released {
		rec.record(who, "ends", -1, &rec.alive)
	}
	_ = h.release(ctx, "", nil)
}

func tail(events []string) string {
	if len(events) > 12 {
		events = events[len(events)-12:]
	}
	return strings.Join(events, "; ")
}
