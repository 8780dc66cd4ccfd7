// Package process runs the framework's child processes (kube-controller-manager, olm, ...) so that
// none outlives the run: each gets its own process group, is killed if the parent dies (Pdeathsig),
// and is stopped with SIGTERM then SIGKILL. Output goes to a log file kept as an artifact.
package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// Process is a running child process.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
	logFile *os.File
}

// Spec describes a process to start.
type Spec struct {
	Name string
	Path string
	Args []string
	Env  []string // appended to os.Environ()
	// Isolated passes Env alone, nothing of this process's environment (a container's env).
	Isolated bool
	// LogPath receives stdout and stderr (created, truncated unless Append).
	LogPath string
	Append  bool
	Dir     string
}

// Start launches the process described by spec.
func Start(spec Spec) (*Process, error) {
	if err := os.MkdirAll(filepath.Dir(spec.LogPath), 0o755); err != nil {
		return nil, err
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if spec.Append {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	logFile, err := os.OpenFile(spec.LogPath, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create log for %s: %w", spec.Name, err)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = append(os.Environ(), spec.Env...)
	if spec.Isolated {
		cmd.Env = append([]string{}, spec.Env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = spec.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Path, err)
	}
	p := &Process{Name: spec.Name, LogPath: spec.LogPath, cmd: cmd, done: make(chan struct{}), logFile: logFile}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Err is the exit error once Exited is closed.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Grace is how long the framework gives a process it stops between SIGTERM and SIGKILL (a pod's
// terminationGracePeriodSeconds, capped: a suite should not wait 30 s for an operator that hangs). Not
// scaled (framework/intervals): it is what the process is promised, not a wait for something expected.
const Grace = 10 * time.Second

// Stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs it. Idempotent.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := -p.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(intervals.Get(intervals.Killed)):
		return fmt.Errorf("%s (pid %d) did not exit within %s after SIGKILL: it is stuck in the kernel (uninterruptible I/O, "+
			"a hung mount); look at /proc/%d/stack", p.Name, p.cmd.Process.Pid, intervals.Get(intervals.Killed), p.cmd.Process.Pid)
	}
}

// WaitFor polls check every interval until it returns true, the process exits (an error quoting the
// tail of its log) or ctx ends.
func (p *Process) WaitFor(ctx context.Context, what string, interval time.Duration, check func(context.Context) bool) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if check(ctx) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before %s: %v; last log lines of %s:\n%s", p.Name, what, p.err, p.LogPath, Tail(p.LogPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s (%s); last log lines of %s:\n%s", what, p.Name, p.LogPath, Tail(p.LogPath, 20))
		case <-t.C:
		}
	}
}

// ErrNotRunning is returned by operations that need a live process.
var ErrNotRunning = errors.New("process is not running")
