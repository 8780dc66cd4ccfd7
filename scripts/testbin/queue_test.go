package main

import (
	"fmt"
	"maps"
	"strings"
	"testing"
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

// drain closes q and says the order in which a -p runner takes what is left.
func drain(q *queue) string {
	q.close()
	var order []string
	for p, ok := q.pop(); ok; p, ok = q.pop() {
		order = append(order, p.path)
	}
	return strings.Join(order, " ")
}
