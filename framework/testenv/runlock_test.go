package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// Each *runLocks plays one process: flock conflicts between open files, not processes, so two
// runLocks in one test process behave like two processes on the machine.
func newProcess() *runLocks { return &runLocks{paths: map[string]*processLock{}} }

func recordingLog() (logr.Logger, func() []string) {
	var mu sync.Mutex
	var said []string
	log := funcr.New(func(_, args string) { mu.Lock(); said = append(said, args); mu.Unlock() }, funcr.Options{})
	return log, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string{}, said...) }
}

// loggerSaying is a logger whose channel closes once a line it logs contains text.
func loggerSaying(text string) (logr.Logger, <-chan struct{}) {
	said := make(chan struct{})
	var once sync.Once
	return funcr.New(func(_, args string) {
		if strings.Contains(args, text) {
			once.Do(func() { close(said) })
		}
	}, funcr.Options{}), said
}

// within fails the test unless fn returns within d; it returns whether it did.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still waiting after %s", what, d)
	}
}

// blocked asserts that fn has not returned after a while, then returns a wait for it.
func blocked(t *testing.T, what string, fn func()) (wait func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
		t.Fatalf("%s did not wait", what)
	case <-time.After(300 * time.Millisecond):
	}
	return func() {
		t.Helper()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still waiting 10s after what it waited for ended", what)
		}
	}
}

func mustLock(t *testing.T, l *runLocks, path string, log logr.Logger) *runHold {
	t.Helper()
	h, err := l.lockRun(context.Background(), path, log)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRunsShareTheClusterUntilOneNeedsItAlone: two runs of two processes use the cluster at once; a run
// that needs it alone waits for both to leave their sections and says why; a new run that starts
// meanwhile is one more to wait for (it does not queue: runs in flight keep their sections from spec
// to spec anyway), and one that starts during the alone section waits for its end.
func TestRunsShareTheClusterUntilOneNeedsItAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.run.lock")
	ctx := context.Background()
	a := mustLock(t, newProcess(), path, logr.Discard())
	var b *runHold
	within(t, 5*time.Second, "a second run while the first is in a section", func() { b = mustLock(t, newProcess(), path, logr.Discard()) })

	log, said := recordingLog()
	c := mustLock(t, newProcess(), path, log)
	var back func()
	aloneDone := blocked(t, "a run that needs the cluster alone while two others use it", func() {
		var err error
		if back, err = c.alone(ctx, "Serial spec X"); err != nil {
			t.Error(err)
		}
	})
	var d *runHold
	within(t, 5*time.Second, "a new run while another waits to be alone", func() { d = mustLock(t, newProcess(), path, logr.Discard()) })
	_ = a.release(ctx, "", nil)
	_ = b.release(ctx, "", nil)
	time.Sleep(300 * time.Millisecond)
	_ = d.release(ctx, "", nil)
	aloneDone()
	newRun := make(chan *runHold, 1)
	go func() { newRun <- mustLock(t, newProcess(), path, logr.Discard()) }()
	select {
	case <-newRun:
		t.Fatal("a new run started while another had the cluster alone")
	case <-time.After(300 * time.Millisecond):
	}
	if s := strings.Join(said(), "\n"); !strings.Contains(s, "other runs use the shared cluster") || !strings.Contains(s, "Serial spec X") || !strings.Contains(s, path) {
		t.Errorf("the waiting run did not say why it waits, naming the lock and what for:\n%s", s)
	}
	back()
	select {
	case r := <-newRun:
		_ = r.release(ctx, "", nil)
	case <-time.After(10 * time.Second):
		t.Fatal("the new run did not start once the alone section ended")
	}
	_ = c.release(ctx, "", nil)
}

// TestTwoRunsThatNeedTheClusterAloneTakeTurns: each waits for the other to stop using the cluster;
// neither may wait forever.
func TestTwoRunsThatNeedTheClusterAloneTakeTurns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.run.lock")
	ctx := context.Background()
	a, b := mustLock(t, newProcess(), path, logr.Discard()), mustLock(t, newProcess(), path, logr.Discard())
	var mu sync.Mutex
	inside := 0
	section := func(h *runHold) {
		back, err := h.alone(ctx, "turn")
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		inside++
		n := inside
		mu.Unlock()
		if n > 1 {
			t.Error("two runs had the cluster alone at once")
		}
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		inside--
		mu.Unlock()
		back()
	}
	within(t, 10*time.Second, "two runs each wanting the cluster alone", func() {
		var wg sync.WaitGroup
		for _, h := range []*runHold{a, b} {
			wg.Go(func() { section(h); section(h); _ = h.release(ctx, "", nil) })
		}
		wg.Wait()
	})
}

// TestRunsOfOneProcessShareItsHold: two runs of one process (parallel test functions) do not wait for
// each other; the cluster is free once both released it, and a release called twice (Stop after a
// failed Start) counts once. They follow the rules among themselves: one alone waits for the other's
// section to end, and a removal waits for the other run to end.
func TestRunsOfOneProcessShareItsHold(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.run.lock")
	ctx := context.Background()
	free := func() bool { // can another process have it alone now?
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	}
	proc := newProcess()
	a := mustLock(t, proc, path, logr.Discard())
	var b *runHold
	within(t, 5*time.Second, "a second run of the same process", func() { b = mustLock(t, proc, path, logr.Discard()) })

	var back func()
	aloneDone := blocked(t, "a run alone while another run of its process is in a section", func() {
		var err error
		if back, err = b.alone(ctx, "Serial"); err != nil {
			t.Error(err)
		}
	})
	var mu sync.Mutex
	bAlive := true
	removed := make(chan bool, 1)
	go func() {
		_ = a.release(ctx, "remove", func() error { mu.Lock(); defer mu.Unlock(); removed <- !bAlive; return nil })
	}()
	aloneDone() // a left its section to remove: b is alone
	back()
	removesOnlyAfter(t, removed, func() { mu.Lock(); bAlive = false; mu.Unlock(); _ = b.release(ctx, "", nil) })
	_ = a.release(ctx, "", nil)
	_ = b.release(ctx, "", nil)
	if !free() {
		t.Fatal("the cluster stayed locked after both runs released it")
	}

	c := mustLock(t, proc, path, logr.Discard())
	d := mustLock(t, proc, path, logr.Discard())
	_ = c.release(ctx, "", nil)
	_ = c.release(ctx, "", nil)
	if free() {
		t.Fatal("the cluster was free while one run of the process still used it")
	}
	_ = d.release(ctx, "", nil)
	if !free() {
		t.Fatal("the cluster stayed locked after both runs released it")
	}
}

// TestARunRemovesOnlyOnceItIsTheLastRun: another run may use what a run installed (it found it there),
// so the removal waits for every other run to end, not just to leave its section: meanwhile the other
// run still gets the cluster alone for a Serial spec (no deadlock), and a new run waits for the removal.
func TestARunRemovesOnlyOnceItIsTheLastRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.run.lock")
	ctx := context.Background()
	a := mustLock(t, newProcess(), path, logr.Discard())
	b := mustLock(t, newProcess(), path, logr.Discard())
	log, queued := loggerSaying("waiting for them to end (remove the controller)")
	a.log = log
	var mu sync.Mutex
	bAlive := true
	removed := make(chan bool, 1)
	go func() {
		_ = a.release(ctx, "remove the controller", func() error {
			mu.Lock()
			defer mu.Unlock()
			removed <- !bAlive
			time.Sleep(300 * time.Millisecond) // a new run must still be waiting now
			return nil
		})
	}()
	within(t, 10*time.Second, "a Serial spec of the other run while a run waits to remove", func() {
		back, err := b.alone(ctx, "Serial")
		if err != nil {
			t.Error(err)
			return
		}
		back()
	})
	// The new run starts once the removal is queued (its wait logged: it holds the turnstile then).
	within(t, 10*time.Second, "the removal to queue", func() { <-queued })
	newRun := make(chan *runHold, 1)
	go func() { newRun <- mustLock(t, newProcess(), path, logr.Discard()) }()
	removesOnlyAfter(t, removed, func() { mu.Lock(); bAlive = false; mu.Unlock(); _ = b.release(ctx, "", nil) })
	select {
	case <-newRun:
		t.Fatal("a new run started while a run was removing")
	case <-time.After(100 * time.Millisecond):
	}
	within(t, 10*time.Second, "a new run after the removal", func() { _ = (<-newRun).release(ctx, "", nil) })
}

// TestAWaitForTheClusterAloneEndsWithItsContext, and leaves the run shared: nothing it would have done
// alone runs.
func TestAWaitForTheClusterAloneEndsWithItsContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.run.lock")
	other := mustLock(t, newProcess(), path, logr.Discard())
	r := mustLock(t, newProcess(), path, logr.Discard())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	ran := false
	err := r.release(ctx, "remove what the run installed", func() error { ran = true; return nil })
	if err == nil || ran || !strings.Contains(err.Error(), "remove what the run installed") {
		t.Fatalf("release while another run uses the cluster, ctx ending: ran=%v err=%v; want not run and an error naming why it waited", ran, err)
	}
	within(t, 5*time.Second, "a run alone after the other's wait ended", func() {
		back, err := other.alone(context.Background(), "after")
		if err != nil {
			t.Error(err)
			return
		}
		back()
	})
	_ = other.release(context.Background(), "", nil)
}

// removesOnlyAfter checks that a pending removal (it sends on removed whether the other run had ended)
// waits while the other run lives, and runs once end ends it.
func removesOnlyAfter(t *testing.T, removed <-chan bool, end func()) {
	t.Helper()
	select {
	case <-removed:
		t.Fatal("a run removed what it installed while another run was alive")
	case <-time.After(300 * time.Millisecond):
	}
	end()
	select {
	case ok := <-removed:
		if !ok {
			t.Fatal("a run removed what it installed while another run was alive")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the removal did not run once the other run ended")
	}
}

func TestEachSharedClusterHasItsOwnRunLock(t *testing.T) {
	t.Setenv("CLEANUP_E2E_KIND_CLUSTER", "one")
	one := runLockPath(Config{Provider: "kind"})
	t.Setenv("CLEANUP_E2E_KIND_CLUSTER", "two")
	if two := runLockPath(Config{Provider: "kind"}); two == one {
		t.Fatalf("kind clusters one and two share the run lock %s", one)
	}
	t.Setenv("KUBECONFIG", "/a")
	a := runLockPath(Config{Provider: "existing"})
	t.Setenv("KUBECONFIG", "/b")
	if b := runLockPath(Config{Provider: "existing"}); a == b {
		t.Fatalf("two kubeconfigs share the run lock %s", a)
	}
}

// An existing cluster's lock is its API server's: every spelling of the kubeconfig and context that
// reaches it shares one (keyed on the spelling, two runs on one cluster removed each other's stack).
func TestEveryWayToNameAnExistingClusterSharesItsRunLock(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := func(name, server string) string {
		path := filepath.Join(dir, name)
		data := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\n"+
			"users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: mine\n  context: {cluster: c, user: u}\n- name: other\n  context: {cluster: c, user: u}\n"+
			"current-context: mine\n", server)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	one, same := kubeconfig("one", "https://10.0.0.1:6443"), kubeconfig("copy", "https://10.0.0.1:6443")
	elsewhere := kubeconfig("elsewhere", "https://10.0.0.2:6443")
	lock := func(kubeconfigPath, kubeContext string) string {
		t.Setenv("KUBECONFIG", kubeconfigPath)
		t.Setenv("CLEANUP_E2E_KUBE_CONTEXT", kubeContext)
		return runLockPath(Config{Provider: "existing"})
	}
	want := lock(one, "")
	for _, c := range []struct{ kubeconfig, context string }{{one, "mine"}, {one, "other"}, {same, ""}, {one + ":" + elsewhere, ""}} {
		if got := lock(c.kubeconfig, c.context); got != want {
			t.Errorf("KUBECONFIG=%s context %q: lock %s, want the cluster's %s", c.kubeconfig, c.context, got, want)
		}
	}
	if got := lock(elsewhere, ""); got == want {
		t.Errorf("another API server shares the lock %s", got)
	}
}
