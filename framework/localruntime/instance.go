package localruntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// instance is one in-process "pod": an entrypoint running for a Deployment, restarted with back-off
// when it returns early.
type instance struct {
	key      types.NamespacedName
	workload *workload
	logPath  string

	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	running  bool
	restarts int
	lastErr  error
}

// Back-off between restarts of a failing entrypoint, like a container in CrashLoopBackOff.
const (
	initialBackoff = 500 * time.Millisecond
	maxBackoff     = 20 * time.Second
)

func startInstance(parent context.Context, key types.NamespacedName, w *workload, ep Entrypoint, cfg *rest.Config,
	logDir string, onChange func()) (*instance, error) {
	logPath := filepath.Join(logDir, fmt.Sprintf("%s_%s.log", key.Namespace, key.Name))
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(parent)
	in := &instance{key: key, workload: w, logPath: logPath, cancel: cancel, done: make(chan struct{})}
	logger := zap.New(zap.WriteTo(f), zap.UseDevMode(false)).WithValues("deployment", key.String())
	getenv := func(k string) string { return w.env[k] }
	// The runtime owns ports and probes: operators bind nothing.
	args := append(append([]string{}, w.args...), "--metrics-bind-address=0", "--health-probe-bind-address=0")
	go func() {
		defer close(in.done)
		defer f.Close()
		backoff := initialBackoff
		for {
			in.setRunning(true, nil)
			onChange()
			logger.Info("starting operator", "image", w.image, "args", strings.Join(args, " "), "serviceAccount", w.serviceAccount)
			err := runGuarded(logr.NewContext(ctx, logger), ep, cfg, args, getenv)
			if ctx.Err() != nil {
				logger.Info("operator stopped")
				in.setRunning(false, nil)
				return
			}
			if err == nil {
				err = fmt.Errorf("entrypoint returned before it was stopped")
			}
			logger.Error(err, "operator exited; restarting", "backoff", backoff.String())
			in.setRunning(false, err)
			onChange()
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
		}
	}()
	return in, nil
}

// runGuarded turns a panic in an operator into an error, as a crashing container would be.
func runGuarded(ctx context.Context, ep Entrypoint, cfg *rest.Config, args []string, getenv func(string) string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return ep(ctx, rest.CopyConfig(cfg), args, getenv)
}

func (in *instance) setRunning(running bool, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !running && err != nil {
		in.restarts++
		in.lastErr = err
	}
	in.running = running
}

func (in *instance) state() (running bool, restarts int, lastErr error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.running, in.restarts, in.lastErr
}

// stop cancels the operator and waits for it to return.
func (in *instance) stop(timeout time.Duration) error {
	in.cancel()
	select {
	case <-in.done:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("operator for deployment %s did not stop within %s", in.key, timeout)
	}
}
