package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// A package whose binary is ready later (linked again after a change) still runs before the shorter
// packages waiting: it must not queue behind every kept one.
func TestTheLongestReadyPackageRunsFirst(t *testing.T) {
	q := newQueue(history{"short": {Seconds: 1, CPU: 1}, "mid": {Seconds: 50, CPU: 40}, "long": {Seconds: 120, CPU: 100}})
	q.push(testPackage{path: "short"})
	q.push(testPackage{path: "mid"})
	if p, _ := q.pop(); p.path != "mid" {
		t.Fatalf("first pop: %q, want mid", p.path)
	}
	q.push(testPackage{path: "long"}) // linked meanwhile
	q.push(testPackage{path: "new"})  // never run: its duration is unknown, so it goes first
	if got := drain(q); got != "new long short" {
		t.Errorf("order %q, want %q", got, "new long short")
	}
}

// A package that mostly waited in its last run (framework/toolchain: 10 s for 0.2 s of CPU) is taken by
// the runners of its own, and only by them unless a -p runner is free; the history they go by is
// kept between runs.
func TestPackagesThatMostlyWaitHaveRunnersOfTheirOwn(t *testing.T) {
	h := history{
		"busy":      {Seconds: 100, CPU: 90},
		"waits":     {Seconds: 10, CPU: 0.2},
		"quick":     {Seconds: 0.5, CPU: 0},  // too short to tell
		"edge":      {Seconds: 20, CPU: 1},   // a second of CPU: busy enough
		"stretched": {Seconds: 331, CPU: 16}, // a busy package slowed down by a second run beside it
	}
	for pkg, want := range map[string]bool{"busy": false, "waits": true, "quick": false, "edge": false, "stretched": false, "new": false} {
		if got := h.waits(pkg); got != want {
			t.Errorf("waits(%s) = %v, want %v (%+v)", pkg, got, want, h[pkg])
		}
	}
	cache := t.TempDir()
	h.save(cache)
	if got := loadHistory(cache); !maps.Equal(got, h) {
		t.Fatalf("loadHistory after save: %+v, want %+v", got, h)
	}

	q := newQueue(h)
	for _, p := range []string{"quick", "busy", "waits", "edge"} {
		q.push(testPackage{path: p})
	}
	if p, _ := q.popWaiting(); p.path != "waits" {
		t.Fatalf("popWaiting took %q, want waits", p.path)
	}
	taken := make(chan string)
	go func() {
		p, ok := q.popWaiting()
		taken <- fmt.Sprintf("%s %v", p.path, ok)
	}()
	q.push(testPackage{path: "waits"}) // e.g. linked again after a change
	if got := <-taken; got != "waits true" {
		t.Fatalf("a waiting runner blocked while busy packages were queued took %q, want the waiting one pushed later", got)
	}
	q.push(testPackage{path: "waits"})
	if p, _ := q.pop(); p.path != "busy" {
		t.Fatalf("pop took %q, want busy: a -p runner takes the longest of any kind", p.path)
	}
	if got := drain(q); got != "edge waits quick" {
		t.Errorf("the -p runners then took %q, want %q", got, "edge waits quick")
	}
	if p, ok := q.popWaiting(); ok {
		t.Errorf("popWaiting on a closed, empty queue took %q", p.path)
	}
}

// A package being linked that is longer than every ready one is awaited by one runner while the others
// take the ready ones; a failed link lets its runner take another; at most awaitable runners wait.
func TestARunnerAwaitsALongerPackageBeingLinked(t *testing.T) {
	h := history{"long": {Seconds: 120, CPU: 50}, "longer": {Seconds: 130, CPU: 50}, "longest": {Seconds: 140, CPU: 50},
		"mid": {Seconds: 50, CPU: 40}, "short": {Seconds: 1, CPU: 1}}
	q := newQueue(h)
	q.begin([]testPackage{{path: "mid"}, {path: "short"}}, []string{"long"})
	first := popAsync(q.pop)
	waitFor(t, func() bool { return awaiting(q) == 1 }, "a runner to await long")
	if p, _ := q.pop(); p.path != "mid" {
		t.Fatalf("a second runner took %q, want mid (long is awaited)", p.path)
	}
	select {
	case got := <-first:
		t.Fatalf("the runner awaiting long took %q before long was linked", got)
	default:
	}
	q.push(testPackage{path: "long"})
	if got := <-first; got != "long" {
		t.Fatalf("the awaiting runner took %q, want long", got)
	}

	q.begin([]testPackage{{path: "mid"}}, []string{"longer", "longest"}) // mid beside short, left from before
	a, b := popAsync(q.pop), popAsync(q.pop)
	waitFor(t, func() bool { return awaiting(q) == awaitable }, "two runners to await longer and longest")
	if p, _ := q.pop(); p.path != "mid" {
		t.Fatalf("a third runner took %q, want mid: at most %d runners await links", p.path, awaitable)
	}
	q.forget("longest") // its link failed
	q.push(testPackage{path: "longer"})
	if got := []string{<-a, <-b}; !slices.Contains(got, "longer") || !slices.Contains(got, "short") {
		t.Errorf("the awaiting runners took %v, want longer and, once longest's link failed, short", got)
	}
	if got := drain(q); got != "" {
		t.Errorf("left %q, want nothing", got)
	}
}

// Runners waiting before the run's packages are known see the kept and the linking ones together: a
// runner awaits a package being linked only when no kept one is longer.
func TestRunnersWaitingAtTheStartSeeEveryKeptPackage(t *testing.T) {
	q := newQueue(history{"specs": {Seconds: 120, CPU: 20}, "cvo": {Seconds: 76, CPU: 11}, "kube": {Seconds: 11, CPU: 2}})
	a, b := popAsync(q.pop), popAsync(q.pop)
	q.begin([]testPackage{{path: "specs"}, {path: "cvo"}}, []string{"kube"})
	if got := []string{<-a, <-b}; !slices.Contains(got, "specs") || !slices.Contains(got, "cvo") {
		t.Fatalf("the two runners took %v, want specs and cvo (kube, being linked, is shorter)", got)
	}
	q.push(testPackage{path: "kube"})
	if got := drain(q); got != "kube" {
		t.Errorf("then %q, want kube", got)
	}
}

func popAsync(pop func() (testPackage, bool)) chan string {
	taken := make(chan string, 1)
	go func() {
		p, _ := pop()
		taken <- p.path
	}()
	return taken
}

func awaiting(q *queue) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.awaited)
}

// waitFor polls cond: a runner's await has no event to wait on from outside the queue.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 10 s waiting for %s", what)
		}
	}
}

// drain closes q and says the order in which a -p runner takes what is left.
func drain(q *queue) string {
	q.close()
	var order []string
	for p, ok := q.pop(); ok; p, ok = q.pop() {
		order = append(order, p.path)
	}
	return strings.Join(order, " ")
}
