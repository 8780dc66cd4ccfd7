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

// runner starts an operator once and returns when it exits; ready is called once it runs, with the
// address its readiness probe answers on ("" when it has none).
type runner interface {
	run(ctx context.Context, logger logr.Logger, ready func(probeAddr string)) error
}

func startInstance(parent context.Context, key types.NamespacedName, w *workload, rn runner,
	logDir string, onChange func()) (*instance, error) {
	logPath := filepath.Join(logDir, LogFile(key))
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
			err := in.runOnce(ctx, rn, logger, onChange)
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
func (in *instance) runOnce(ctx context.Context, rn runner, logger logr.Logger, onChange func()) error {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	in.setRunning(true, nil)
	return rn.run(runCtx, logger, func(addr string) {
		in.probe(runCtx, addr, onChange)
		onChange()
	})
}

// inProcess runs an Entrypoint in the test process (the fast mode; see docs/CONTRACTS.md).
type inProcess struct {
	w   *workload
	ep  Entrypoint
	cfg *rest.Config
}

func (p inProcess) run(ctx context.Context, logger logr.Logger, ready func(string)) error {
	args, addr, err := p.argsForStart()
	if err != nil {
		return err
	}
	ready(addr)
	logger.Info("starting operator", "image", p.w.image, "args", strings.Join(args, " "), "serviceAccount", p.w.serviceAccount)
	return runGuarded(logr.NewContext(ctx, logger), p.ep, p.cfg, args, func(k string) string { return p.w.env[k] })
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
// only when the readiness probe needs one, on a fresh port each start (returned).
func (p inProcess) argsForStart() (args []string, probeAddr string, err error) {
	health := "0"
	if p.w.readiness != nil {
		if probeAddr, err = freeLoopbackAddress(); err != nil {
			return nil, "", fmt.Errorf("a port for the readiness probe: %w", err)
		}
		health = probeAddr
	}
	return append(append([]string{}, p.w.args...), "--metrics-bind-address=0", "--health-probe-bind-address="+health), probeAddr, nil
}

// probe marks the instance ready right away without a readiness probe, else (calling onChange) once
// the probe answers at addr.
func (in *instance) probe(ctx context.Context, addr string, onChange func()) {
	r := in.workload.readiness
	if r == nil {
		in.setReady()
		return
	}
	go func() {
		if r.waitReady(ctx, addr) {
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
