package scripts_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestE2EInterruptDeletesCluster is issue 6's Ctrl-C fault: an interrupt while `make e2e` runs the
// suites on kind must leave no cluster behind (unless CLEANUP_E2E_KEEP_CLUSTER=1) and exit non-zero. It runs
// scripts/e2e.sh on its own cluster with the smoke suite only, interrupts the whole process group as a
// terminal's Ctrl-C would once the suites started, and checks Docker for the node. About 1.5 minutes,
// with the node image and images already built; needs Docker, hence the gate.
func TestE2EInterruptDeletesCluster(t *testing.T) {
	if os.Getenv("CLEANUP_E2E_KIND") != "1" {
		t.Skip("set CLEANUP_E2E_KIND=1 to run make e2e on kind and interrupt it")
	}
	withDefaultSIGINT(t)
	name := fmt.Sprintf("cleanup-e2e-interrupt-%d", os.Getpid())
	t.Cleanup(func() { removeKindNodes(name) })

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "e2e.sh")
	cmd.Env = append(os.Environ(), "PROVIDER=kind", "CLEANUP_E2E_KIND_CLUSTER="+name, "CLEANUP_E2E_KEEP_CLUSTER=0",
		"GINKGO_LABEL_FILTER=smoke", "ARTIFACTS="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a process group, like a terminal's job
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var output bytes.Buffer
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			output.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "==> e2e suites on PROVIDER=kind") {
				once.Do(func() { close(started) })
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); pw.Close() }()
	log := func() string { mu.Lock(); defer mu.Unlock(); return output.String() }

	select {
	case <-started:
	case err := <-done:
		t.Fatalf("make e2e ended (%v) before its suites started:\n%s", err, log())
	}
	if !nodeExists(t, name) {
		t.Fatalf("the suites started but cluster %s has no node:\n%s", name, log())
	}
	t.Logf("suites started on cluster %s: interrupting the process group", name)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("an interrupted make e2e must fail, got %v", err)
	}
	if nodeExists(t, name) {
		t.Errorf("cluster %s still has a node after the interrupt:\n%s", name, log())
	}
	if !strings.Contains(log(), "delete kind cluster "+name) {
		t.Errorf("make e2e did not say it deleted the cluster:\n%s", log())
	}
	// The runs atonce started (every suite and the examples, each in its own session, out of reach of
	// the interrupt) must be gone too: one still starting would create the cluster again.
	if left := processesWith("CLEANUP_E2E_KIND_CLUSTER=" + name); len(left) > 0 {
		t.Errorf("processes of the interrupted make e2e still run: %s", strings.Join(left, "; "))
	}
}

// processesWith lists the processes (pid and command line) whose environment holds entry.
func processesWith(entry string) []string {
	dirs, _ := os.ReadDir("/proc")
	var out []string
	for _, d := range dirs {
		env, err := os.ReadFile("/proc/" + d.Name() + "/environ")
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), entry) {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		out = append(out, d.Name()+" "+strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	return out
}

// nodeExists says whether Docker has a kind node container of the cluster (kind labels every node).
func nodeExists(t *testing.T, cluster string) bool {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=io.x-k8s.kind.cluster="+cluster).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.TrimSpace(string(out)) != ""
}

func removeKindNodes(cluster string) {
	out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=io.x-k8s.kind.cluster="+cluster).Output()
	for _, id := range strings.Fields(string(out)) {
		_ = exec.Command("docker", "rm", "-f", "-v", id).Run()
	}
}
