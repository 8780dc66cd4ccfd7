package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// Each apiLocker made here plays one process (its own apiLocks: a flock conflicts between open files).
func apiProcess(dir string, log logr.Logger) *apiLocker {
	return &apiLocker{locks: &apiLocks{paths: map[string]*apiLock{}}, prefix: filepath.Join(dir, "cluster.run"), log: log}
}

// holdsOf holds apis all exclusively or all shared.
func holdsOf(exclusive bool, apis ...string) cluster.APIHolds {
	if exclusive {
		return cluster.APIHolds{Exclusive: apis}
	}
	return cluster.APIHolds{Shared: apis}
}

func mustLockAPIs(t *testing.T, a *apiLocker, exclusive bool, apis ...string) func() {
	t.Helper()
	done, err := a.LockAPIs(context.Background(), holdsOf(exclusive, apis...), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return done
}

// An AllNamespaces case holds its operator's APIs exclusively: it waits for the specs of other runs
// that use them, and says why; specs using other APIs go on beside it; a spec that uses its APIs waits
// for it to end.
func TestAnExclusiveAPIHoldWaitsOnlyForTheSpecsUsingThoseAPIs(t *testing.T) {
	dir := t.TempDir()
	log, said := recordingLog()
	widgets, memcached := apiProcess(dir, logr.Discard()), apiProcess(dir, log)
	using := mustLockAPIs(t, widgets, false, "widget.fixtures.io", "memcached.cache.example.com")
	other := mustLockAPIs(t, widgets, false, "widget.fixtures.io")
	var global func()
	wait := blocked(t, "an exclusive hold of an API another run's spec uses", func() {
		global = mustLockAPIs(t, memcached, true, "memcached.cache.example.com")
	})
	if s := strings.Join(said(), "\n"); !strings.Contains(s, "other runs' specs use the API; waiting for them to end") ||
		!strings.Contains(s, "memcached.cache.example.com") {
		t.Errorf("the wait does not say what it waits for:\n%s", s)
	}
	within(t, 10*time.Second, "an exclusive hold of an API nobody uses", func() {
		mustLockAPIs(t, memcached, true, "gizmo.fixtures.io")()
	})
	using()
	wait()
	within(t, 10*time.Second, "a spec using other APIs beside the exclusive hold", func() {
		mustLockAPIs(t, widgets, false, "widget.fixtures.io")()
	})
	waitShared := blocked(t, "a spec using the API held exclusively", func() {
		mustLockAPIs(t, widgets, false, "memcached.cache.example.com")()
	})
	global()
	waitShared()
	other()
}

// A spec that deletes the kinds it owns everywhere but only uses one it requires (gizmo-operator's
// OLM v1 uninstall: its Gizmo CRD goes, its Widgets stay) holds the first exclusively and the second
// shared: another run's spec using the required API goes on beside it, one using the owned API waits
// for it, and so does an exclusive hold of the required API (whose cleanup would take its Widgets).
func TestAMixedHoldSharesOnlyItsSharedAPIs(t *testing.T) {
	dir := t.TempDir()
	gizmos, widgets := apiProcess(dir, logr.Discard()), apiProcess(dir, logr.Discard())
	mixed, err := gizmos.LockAPIs(context.Background(),
		cluster.APIHolds{Exclusive: []string{"gizmo.fixtures.io"}, Shared: []string{"widget.fixtures.io"}}, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	within(t, 10*time.Second, "a spec of another run using the API the mixed hold shares", func() {
		mustLockAPIs(t, widgets, false, "widget.fixtures.io")()
	})
	waitOwned := blocked(t, "a spec using the API the mixed hold has exclusively", func() {
		mustLockAPIs(t, widgets, false, "gizmo.fixtures.io")()
	})
	waitRequired := blocked(t, "an exclusive hold of the API the mixed hold shares", func() {
		mustLockAPIs(t, widgets, true, "widget.fixtures.io")()
	})
	mixed()
	waitOwned()
	waitRequired()
	// An API named in both lists is held exclusively.
	both, err := gizmos.LockAPIs(context.Background(),
		cluster.APIHolds{Exclusive: []string{"widget.fixtures.io"}, Shared: []string{"widget.fixtures.io"}}, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	waitBoth := blocked(t, "a spec using an API named in both lists of a hold", func() {
		mustLockAPIs(t, widgets, false, "widget.fixtures.io")()
	})
	both()
	waitBoth()
}

// Specs are short, so an exclusive wait queues the specs that come after it (the API's turnstile):
// a stream of specs using the API cannot starve it.
func TestAnExclusiveAPIWaitQueuesTheSpecsThatComeAfterIt(t *testing.T) {
	dir := t.TempDir()
	a, b, c := apiProcess(dir, logr.Discard()), apiProcess(dir, logr.Discard()), apiProcess(dir, logr.Discard())
	first := mustLockAPIs(t, a, false, "memcached.cache.example.com")
	var mu sync.Mutex
	var order []string
	got := func(who string) { mu.Lock(); order = append(order, who); mu.Unlock() }
	var global func()
	waitGlobal := blocked(t, "the exclusive hold", func() {
		global = mustLockAPIs(t, b, true, "memcached.cache.example.com")
		got("exclusive")
	})
	waitLater := blocked(t, "a spec that came after the exclusive wait", func() {
		done := mustLockAPIs(t, c, false, "memcached.cache.example.com")
		got("later")
		done()
	})
	first()
	waitGlobal()
	time.Sleep(100 * time.Millisecond) // the later spec must still be waiting: check after a moment
	global()
	waitLater()
	if strings.Join(order, ",") != "exclusive,later" {
		t.Errorf("got the API in the order %v, want the exclusive wait first", order)
	}
}

// The specs of one process (a Ginkgo process, or parallel tests) share one open file per API and
// follow the same rules among themselves; a wait ends with its context and leaves nothing held.
func TestAPILocksWithinAProcessAndWaitsThatEnd(t *testing.T) {
	dir := t.TempDir()
	p, other := apiProcess(dir, logr.Discard()), apiProcess(dir, logr.Discard())
	a := mustLockAPIs(t, p, false, "memcached.cache.example.com")
	b := mustLockAPIs(t, p, false, "memcached.cache.example.com")
	a()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := p.LockAPIs(ctx, holdsOf(true, "memcached.cache.example.com"), "global"); err == nil ||
		!strings.Contains(err.Error(), "memcached.cache.example.com") {
		t.Fatalf("an exclusive wait for a hold of its own process that did not end: %v, want an error naming the API", err)
	}
	if _, err := other.LockAPIs(ctx, holdsOf(true, "memcached.cache.example.com"), "global"); err == nil {
		t.Fatal("another process got the API exclusively while a spec held it shared")
	}
	b()
	within(t, 10*time.Second, "an exclusive hold once the process's specs ended (the failed waits hold nothing)", func() {
		mustLockAPIs(t, other, true, "memcached.cache.example.com")()
		mustLockAPIs(t, p, true, "memcached.cache.example.com")()
	})
	if _, err := p.LockAPIs(context.Background(), holdsOf(false, "Memcached/x"), "a spec"); err == nil ||
		!strings.Contains(err.Error(), "want kind.group") {
		t.Errorf("a bad API name: %v, want an error saying what an API looks like", err)
	}
}

// TestAPILocksRandomizedKeepTheInvariant: processes with specs in parallel take random sets of APIs,
// each shared or exclusive, for a random while; whenever a spec holds an API exclusively no other spec holds
// it, and every seed ends (no deadlock). CLEANUP_E2E_SEED=N replays one seed.
func TestAPILocksRandomizedKeepTheInvariant(t *testing.T) {
	for seed := range seeds(t, 30) {
		t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			dir := t.TempDir()
			apis := []string{"a.example.com", "b.example.com", "c.example.com"}
			var mu sync.Mutex
			shared, exclusive := map[string]int{}, map[string]int{}
			var violations []string
			var wg sync.WaitGroup
			for p := range 3 {
				proc := apiProcess(dir, logr.Discard())
				for s := range 2 {
					rng := rand.New(rand.NewPCG(uint64(seed), uint64(p*10+s)))
					wg.Go(func() {
						for range 6 {
							// a random set of the APIs, each exclusive or shared (an exclusive hold mixes
							// them: the kinds its operator owns exclusive, those it requires shared)
							var holds cluster.APIHolds
							for _, a := range apis {
								switch rng.IntN(4) {
								case 0:
									holds.Exclusive = append(holds.Exclusive, a)
								case 1, 2:
									holds.Shared = append(holds.Shared, a)
								}
							}
							done, err := proc.LockAPIs(context.Background(), holds, fmt.Sprintf("p%d/s%d", p, s))
							if err != nil {
								mu.Lock()
								violations = append(violations, err.Error())
								mu.Unlock()
								return
							}
							mu.Lock()
							for _, a := range holds.Exclusive {
								if exclusive[a] > 0 || shared[a] > 0 {
									violations = append(violations, fmt.Sprintf("p%d/s%d took %s exclusively while %d held it exclusively and %d shared",
										p, s, a, exclusive[a], shared[a]))
								}
								exclusive[a]++
							}
							for _, a := range holds.Shared {
								if exclusive[a] > 0 {
									violations = append(violations, fmt.Sprintf("p%d/s%d took %s shared while %d held it exclusively", p, s, a, exclusive[a]))
								}
								shared[a]++
							}
							mu.Unlock()
							time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
							mu.Lock()
							for _, a := range holds.Exclusive {
								exclusive[a]--
							}
							for _, a := range holds.Shared {
								shared[a]--
							}
							mu.Unlock()
							done()
						}
					})
				}
			}
			within(t, 30*time.Second, fmt.Sprintf("seed %d (replay: CLEANUP_E2E_SEED=%d)", seed, seed), wg.Wait)
			for _, v := range violations {
				t.Errorf("seed %d (replay: CLEANUP_E2E_SEED=%d): %s", seed, seed, v)
			}
		})
	}
}

// workDirProvider is an envtest-like provider: only its work directory matters here.
type workDirProvider struct {
	cluster.Provider
	dir string
}

func (p workDirProvider) WorkDir() string        { return p.dir }
func (p workDirProvider) Kind() string           { return "envtest" }
func (p workDirProvider) Name() string           { return "cleanup" }
func (p workDirProvider) KubeconfigPath() string { return filepath.Join(p.dir, "kubeconfig") }

// An envtest cluster is no shared cluster, but the Ginkgo processes of its run share it (framework/suite):
// its API locks are in its work directory, and a process that Connects takes the same ones, so an
// AllNamespaces case of one process waits for the specs of another that use its APIs.
func TestTheProcessesOfARunOnEnvtestTakeTheSameAPILocks(t *testing.T) {
	dir := t.TempDir()
	path := apiLocksPath(nil, workDirProvider{dir: dir})
	if path != filepath.Join(dir, "run.lock") {
		t.Fatalf("API locks of an envtest cluster at %q, want them in its work directory %s", path, dir)
	}
	if apiLocksPath(nil, workDirProvider{}) != "" || (Shared{}).APILocker(logr.Discard()) != nil {
		t.Error("a cluster without a work directory or lock path must have no API locks, not locks in the current directory")
	}
	env := &Env{Environment: cluster.Environment{Provider: workDirProvider{dir: dir}}, apiLocks: path}
	b, err := json.Marshal(env.Share())
	if err != nil {
		t.Fatal(err)
	}
	var connected Shared
	if err := json.Unmarshal(b, &connected); err != nil {
		t.Fatal(err)
	}
	first := newAPILocker(path, logr.Discard())
	other, ok := connected.APILocker(logr.Discard()).(*apiLocker)
	if !ok || other == nil {
		t.Fatalf("a process that Connects (%s) has no API locks", b)
	}
	global := mustLockAPIs(t, first, true, "widget.fixtures.io")
	wait := blocked(t, "a spec of another process using the API held exclusively", func() {
		mustLockAPIs(t, other, false, "widget.fixtures.io")()
	})
	global()
	wait()
}
