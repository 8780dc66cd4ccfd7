package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

// A shared cluster (kind, existing) serves one run at a time: each run ensures the stack and tears
// down what it installed when it ends, which must not happen under another run's specs. So Start takes
// the cluster's run lock and Stop releases it: the test binaries of `go test ./...` (several at once by
// default) then take turns on the cluster, while packages on envtest, which start their own control
// planes, run beside them. Ginkgo's other processes of the same run Connect without the lock. The lock
// is a flock, so a run that dies releases it.

// runLockPath is the lock of the cluster in.ProviderName() would use: a kind cluster by its name, an
// existing one by its kubeconfig and context.
func runLockPath(in Input) string {
	dir := filepath.Join(os.TempDir(), "cleanup-e2e-kind")
	if in.ProviderName() == "kind" {
		return filepath.Join(dir, KindClusterName()+".run.lock")
	}
	h := sha256.Sum256([]byte(os.Getenv("KUBECONFIG") + "\x00" + envvar.KubeContext.Get()))
	return filepath.Join(dir, "existing-"+hex.EncodeToString(h[:])[:16]+".run.lock")
}

// held is this process's holds of each run lock: a flock conflicts with every other open of the file,
// the same process's too, so a second Start in one process (two test functions that each start an Env
// and run in parallel) shares the hold instead of waiting for itself forever.
var held = struct {
	sync.Mutex
	paths map[string]*heldLock
}{paths: map[string]*heldLock{}}

type heldLock struct {
	mu    sync.Mutex // held while the flock is taken, so only one goroutine waits for it
	f     *os.File
	holds int
}

// lockRun takes the run lock at path, saying so when another run holds it (a wait of minutes would
// otherwise look like a hang), and returns its release.
func lockRun(path string, log logr.Logger) (func(), error) {
	held.Lock()
	h, ok := held.paths[path]
	if !ok {
		h = &heldLock{}
		held.paths[path] = h
	}
	held.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holds == 0 {
		f, err := lockFile(path, log, "another run uses the shared cluster; waiting for it to end (one run at a time: each tears down its stack)")
		if err != nil {
			return nil, err
		}
		h.f = f
	}
	h.holds++
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.holds--; h.holds == 0 {
				unlockFile(h.f)
			}
		})
	}, nil
}

// lockFile opens path and takes its exclusive flock; when another process holds it, it logs waiting
// (a wait of minutes would otherwise look like a hang) and how long it waited. Release it with
// unlockFile; a process that dies releases it too.
func lockFile(path string, log logr.Logger, waiting string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		log.Info(waiting, "lock", path)
		start := time.Now()
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err == nil {
			log.Info("got the lock", "lock", path, "waited", time.Since(start).Round(time.Second).String())
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

func unlockFile(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}
