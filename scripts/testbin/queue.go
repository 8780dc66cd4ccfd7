package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// queue holds the packages whose binaries are ready; pop takes the longest first (by the previous run),
// so a package linked again after a change does not wait behind every kept one: a long suite queued
// last ends the run alone, about half as long again.
//
// Packages that mostly wait (history.waits) have runners of their own beside the -p others
// (popWaiting): in order of length they would start last and end the run alone — framework/toolchain's
// 10 s, of which 9 s a fake start running out of its time, using 0.2 s of CPU.
//
// A package being linked that is longer than every ready one is awaited by a runner (at most
// awaitable of them) instead of being taken by the first runner free after it is linked: after a
// change to framework/cluster/envtest, its link takes 9 s, the six runners take the kept packages
// meanwhile, and it would start at ≈ 80 s and end the run ≈ 25 s late.
type queue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  []testPackage
	closed bool
	h      history
	// linking: the packages whose binaries are being linked (begin), until pushed or forgotten.
	linking map[string]bool
	// awaited: the packages being linked that a runner waits for.
	awaited map[string]bool
}

// awaitable is how many runners may wait for links at once: link links two at a time, longest first,
// so those two are the ones in progress; a third would idle while kept binaries wait.
const awaitable = 2

// newQueue orders by a copy of h: the runners record this run's measurements in h meanwhile.
func newQueue(h history) *queue {
	q := &queue{h: maps.Clone(h), linking: map[string]bool{}, awaited: map[string]bool{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// begin puts the packages whose binaries are there and names those being linked (each pushed once
// linked, or forgotten), at once: a runner that woke between two pushes saw none of the longer kept
// packages still to come and awaited a short one being linked (e2e/cvo, the fifth longest, then
// started ≈ 30 s late and ended the run).
func (q *queue) begin(ready []testPackage, linking []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, p := range linking {
		q.linking[p] = true
	}
	q.items = append(q.items, ready...)
	q.cond.Broadcast()
}

// forget says a package's link failed: it never comes, and whoever awaited it takes another.
func (q *queue) forget(path string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.linking, path)
	q.cond.Broadcast()
}

func (q *queue) push(p testPackage) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.linking, p.path)
	q.items = append(q.items, p)
	q.cond.Broadcast() // both kinds of runner wait on cond; only one kind may take p
}

// close says no more packages come; pop then drains what is left.
func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// pop waits for a package and takes the longest; false once closed and empty.
func (q *queue) pop() (testPackage, bool) { return q.take(func(string) bool { return true }) }

// popWaiting is pop for the runners of the packages that mostly wait: it takes only those.
func (q *queue) popWaiting() (testPackage, bool) { return q.take(q.h.waits) }

func (q *queue) take(fits func(path string) bool) (testPackage, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		i, linking := q.longest(fits)
		if i >= 0 {
			return q.remove(i), true
		}
		if linking != "" {
			if p, ok := q.await(linking); ok {
				return p, true
			}
			continue // its link failed
		}
		if q.closed {
			return testPackage{}, false
		}
		q.cond.Wait()
	}
}

// longest is the index in items of the longest package that fits and that no runner awaits, or -1 and
// the path of a package being linked that is longer still, when a runner may await one.
func (q *queue) longest(fits func(string) bool) (int, string) {
	best, linking, length := -1, "", -1.0 // every history length is ≥ 0
	for i, p := range q.items {
		if fits(p.path) && !q.awaited[p.path] && q.h.of(p.path) > length {
			best, length = i, q.h.of(p.path)
		}
	}
	if len(q.awaited) < awaitable {
		for path := range q.linking {
			if fits(path) && !q.awaited[path] && q.h.of(path) > length {
				best, linking, length = -1, path, q.h.of(path)
			}
		}
	}
	return best, linking
}

// await holds the calling runner until the package being linked at path is ready (true) or its link
// failed (false).
func (q *queue) await(path string) (testPackage, bool) {
	q.awaited[path] = true
	defer func() {
		delete(q.awaited, path)
		q.cond.Broadcast() // a runner held back by awaitable may await another now
	}()
	for {
		if i := slices.IndexFunc(q.items, func(p testPackage) bool { return p.path == path }); i >= 0 {
			return q.remove(i), true
		}
		if !q.linking[path] {
			return testPackage{}, false
		}
		q.cond.Wait()
	}
}

func (q *queue) remove(i int) testPackage {
	p := q.items[i]
	q.items = slices.Delete(q.items, i, i+1)
	return p
}

// history is what the previous run measured of each package.
type history map[string]measured

// measured is a package's seconds in a run and the CPU its tests took with every process they
// started (their control planes).
type measured struct {
	Seconds float64 `json:"seconds"`
	CPU     float64 `json:"cpuSeconds"`
}

const historyFile = "history.json"

// waitingCPU is the most CPU a package that mostly waits took in its last run, its tests and every
// process they started together: framework/toolchain's slot tests and fake starts 0.15–0.2 s over
// 10 s, framework/testenv's lock tests 0.3–0.4 s over 12 s; the next, framework/cluster/existing and
// framework/kube, 2–2.8 s. A share of a core would not do: two runs side by side stretch
// every package's seconds but not its CPU, and after one pair framework/cluster/envtest (16 s of CPU
// over 331 s) looked as idle as the waiting ones.
const waitingCPU = 1.0

func loadHistory(cache string) history {
	h := history{}
	if b, err := os.ReadFile(filepath.Join(cache, historyFile)); err == nil {
		_ = json.Unmarshal(b, &h)
	}
	return h
}

// of is a package's last duration; one never run comes first (its duration is unknown).
func (h history) of(pkg string) float64 {
	if m, ok := h[pkg]; ok {
		return m.Seconds
	}
	return 1e9
}

// waits says whether pkg mostly waited in its last run: at least a second long and under waitingCPU
// seconds of CPU. A package never run does not (nothing is known of it).
func (h history) waits(pkg string) bool {
	m, ok := h[pkg]
	return ok && m.Seconds >= 1 && m.CPU < waitingCPU
}

func (h history) save(cache string) {
	b, _ := json.MarshalIndent(h, "", "  ")
	file := filepath.Join(cache, historyFile)
	tmp := ownName(file, "tmp") // a run reading it meanwhile sees the old file or the new, whole
	if os.WriteFile(tmp, b, 0o644) != nil || os.Rename(tmp, file) != nil {
		_ = os.Remove(tmp)
	}
}
