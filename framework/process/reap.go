package process

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// A work directory is owned by the process whose pid is in its OwnerFile. Children started by the
// framework (or by envtest, which knows nothing of process groups) carry the work directory in their
// command line, so a directory whose owner is gone can be cleaned: its processes killed, then removed.

// OwnerFile is the name of the file holding the owner pid inside a work directory.
const OwnerFile = "owner.pid"

// NewWorkDir creates a work directory under root owned by this process.
func NewWorkDir(root, prefix string) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(root, prefix+"-")
	if err != nil {
		return "", err
	}
	// Written under another name and renamed: a reaper in another process must never read it half-written.
	tmp := filepath.Join(dir, OwnerFile+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, filepath.Join(dir, OwnerFile)); err != nil {
		return "", err
	}
	return dir, nil
}

// ReapStale removes work directories under root whose owner process is gone, first killing any process
// whose command line mentions them. It returns what it cleaned.
func ReapStale(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var reaped []string
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || ownerAlive(dir) {
			continue
		}
		if err := KillReferencing(dir); err != nil {
			return reaped, err
		}
		if err := os.RemoveAll(dir); err != nil {
			return reaped, fmt.Errorf("remove stale work dir %s: %w", dir, err)
		}
		reaped = append(reaped, dir)
	}
	return reaped, nil
}

func ownerAlive(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, OwnerFile))
	pid, parseErr := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || parseErr != nil || pid <= 0 {
		// Being created right now (the owner file is written just after the directory; a run of an
		// older version wrote it in place, so it could be read empty), or not ours.
		info, statErr := os.Stat(dir)
		return statErr == nil && time.Since(info.ModTime()) < time.Minute
	}
	return syscall.Kill(pid, 0) == nil
}

// Referencing lists pids (other than this process) whose command line or environment names the path s
// (envtest's etcd and kube-apiserver get the work dir as flags; olm gets KUBECONFIG=<work dir>/...):
// s itself or a path below it, not a longer name it is the start of (a stale envtest-123 is not the
// live envtest-1234, whose processes a reap would kill).
func Referencing(s string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, dir := range dirs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil || pid == os.Getpid() {
			continue
		}
		for _, f := range []string{"cmdline", "environ"} {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err == nil && namesPath(string(data), s) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// namesPath reports whether data holds path, followed by the end, a "/" or a byte no file name
// continues with here (a NUL between arguments, "=", ",", ":", a space, a quote).
func namesPath(data, path string) bool {
	for rest := data; ; {
		i := strings.Index(rest, path)
		if i < 0 {
			return false
		}
		after := rest[i+len(path):]
		if after == "" || !strings.ContainsAny(after[:1], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") {
			return true
		}
		rest = after
	}
}

// KillReferencing SIGKILLs every process whose command line or environment names s (Referencing) and
// waits until they are gone.
func KillReferencing(s string) error {
	pids := Referencing(s)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Every 100 ms: the check reads /proc only.
	_ = intervals.Wait(context.Background(), intervals.Killed, func() (bool, string) {
		pids = alive(pids)
		return len(pids) == 0, ""
	}, intervals.Every(100*time.Millisecond))
	if len(pids) > 0 {
		return fmt.Errorf("processes %v referencing %s survived SIGKILL", pids, s)
	}
	return nil
}

func alive(pids []int) []int {
	var out []int
	for _, pid := range pids {
		// A zombie still answers kill(0); read its state to tell.
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) > 2 && f[2] == "Z" {
			continue
		}
		out = append(out, pid)
	}
	return out
}
