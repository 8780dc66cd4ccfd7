package testenv

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
)

// TestASecondRunOnASharedClusterWaitsForTheFirst: the run lock serialises runs on one cluster, and the
// one that waits says why.
func TestASecondRunOnASharedClusterWaitsForTheFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.run.lock")
	var mu sync.Mutex
	var said []string
	log := funcr.New(func(_, args string) { mu.Lock(); said = append(said, args); mu.Unlock() }, funcr.Options{})

	first, err := lockRun(path, log)
	if err != nil {
		t.Fatal(err)
	}
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
	first() // releasing twice (Stop after a failed Start) is harmless
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
