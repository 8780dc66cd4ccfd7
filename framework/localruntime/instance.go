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
	ready    bool // running and, with a readiness probe, answering it
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
	go func() {
		defer close(in.done)
		defer f.Close()
		backoff := initialBackoff
		for {
			err := in.runOnce(ctx, w, ep, cfg, logger, onChange)
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

// runOnce starts the operator once and returns when it does (its readiness probe ends with it).
func (in *instance) runOnce(ctx context.Context, w *workload, ep Entrypoint, cfg *rest.Config, logger logr.Logger, onChange func()) error {
	args, err := in.argsForStart(w)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	in.setRunning(true, nil)
	in.probe(runCtx, w, args, onChange)
	onChange()
	logger.Info("starting operator", "image", w.image, "args", strings.Join(args, " "), "serviceAccount", w.serviceAccount)
	return runGuarded(logr.NewContext(runCtx, logger), ep, cfg, args, func(k string) string { return w.env[k] })
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

// argsForStart is the container's args plus the runtime's: no metrics server, and a health server
// only when the readiness probe needs one, on a fresh port each start.
func (in *instance) argsForStart(w *workload) ([]string, error) {
	health := "0"
	if w.readiness != nil {
		addr, err := probeAddress()
		if err != nil {
			return nil, fmt.Errorf("a port for the readiness probe: %w", err)
		}
		health = addr
	}
	return append(append([]string{}, w.args...), "--metrics-bind-address=0", "--health-probe-bind-address="+health), nil
}

// probe marks the instance ready right away without a readiness probe, else (calling onChange) once
// the probe answers on the address args gave the operator's health server.
func (in *instance) probe(ctx context.Context, w *workload, args []string, onChange func()) {
	if w.readiness == nil {
		in.setReady()
		return
	}
	addr := strings.TrimPrefix(args[len(args)-1], "--health-probe-bind-address=")
	go func() {
		if w.readiness.waitReady(ctx, addr) {
			in.setReady()
			onChange()
		}
	}()
}

func (in *instance) setRunning(running bool, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !running && err != nil {
		in.restarts++
		in.lastErr = err
	}
	in.running, in.ready = running, false
}

func (in *instance) setReady() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.ready = in.running
}

func (in *instance) state() (running, ready bool, restarts int, lastErr error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.running, in.ready, in.restarts, in.lastErr
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
