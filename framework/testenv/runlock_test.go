package testenv

import (
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

// TestASecondRunOnASharedClusterWaitsForTheFirst: the run lock serialises runs on one cluster, and the
// one that waits says why.
func TestASecondRunOnASharedClusterWaitsForTheFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.run.lock")
	var mu sync.Mutex
	var said []string
	log := funcr.New(func(_, args string) { mu.Lock(); said = append(said, args); mu.Unlock() }, funcr.Options{})

	// The other run is another process: its own open of the lock file.
	other, err := lockFile(path, logr.Discard(), "waiting")
	if err != nil {
		t.Fatal(err)
	}
	first := func() { other.Close() } // as when that process ends
	second := make(chan func())
	go func() {
		unlock, err := lockRun(path, log)
		if err != nil {
			t.Error(err)
		}
		second <- unlock
	}()
	select {
	case <-second:
		t.Fatal("a second run started while the first held the cluster")
	case <-time.After(300 * time.Millisecond):
	}
	first()
	select {
	case unlock := <-second:
		unlock()
	case <-time.After(10 * time.Second):
		t.Fatal("the second run did not start once the first released the cluster")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) == 0 || !strings.Contains(said[0], "another run uses the shared cluster") || !strings.Contains(said[0], path) {
		t.Fatalf("the waiting run did not say why it waits, naming the lock: %q", said)
	}
}

func TestEachSharedClusterHasItsOwnRunLock(t *testing.T) {
	t.Setenv("CLEANUP_E2E_KIND_CLUSTER", "one")
	one := runLockPath(Input{Provider: "kind"})
	t.Setenv("CLEANUP_E2E_KIND_CLUSTER", "two")
	if two := runLockPath(Input{Provider: "kind"}); two == one {
		t.Fatalf("kind clusters one and two share the run lock %s", one)
	}
	t.Setenv("KUBECONFIG", "/a")
	a := runLockPath(Input{Provider: "existing"})
	t.Setenv("KUBECONFIG", "/b")
	if b := runLockPath(Input{Provider: "existing"}); a == b {
		t.Fatalf("two kubeconfigs share the run lock %s", a)
	}
}

// TestStartsInOneProcessShareTheRunLock: two Envs of one process (parallel test functions) share the
// hold instead of waiting for each other forever; the cluster is free once both released it, and a
// release called twice (Stop after a failed Start) counts once.
func TestStartsInOneProcessShareTheRunLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.run.lock")
	free := func() bool { // can another process take it now?
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	}
	a, err := lockRun(path, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan func())
	go func() {
		b, err := lockRun(path, logr.Discard())
		if err != nil {
			t.Error(err)
		}
		done <- b
	}()
	var b func()
	select {
	case b = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a second Start in the same process waits for the first")
	}
	a()
	a()
	if free() {
		t.Fatal("the cluster was free while one Env of the process still used it")
	}
	b()
	if !free() {
		t.Fatal("the cluster stayed locked after both Envs released it")
	}
}
