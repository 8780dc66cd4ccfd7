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

// lockRun takes the run lock at path, saying so when another run holds it (a wait of minutes would
// otherwise look like a hang), and returns its release.
func lockRun(path string, log logr.Logger) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		log.Info("another run uses the shared cluster; waiting for it to end (one run at a time: each tears down its stack)",
			"lock", path)
		start := time.Now()
		if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err == nil {
			log.Info("the other run ended", "waited", time.Since(start).Round(time.Second).String())
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	var once sync.Once
	return func() { once.Do(func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }) }, nil
}
