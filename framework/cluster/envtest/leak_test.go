package envtest

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/process"
)

// The helper mode of this test binary: start a provider, print its work dir, and stop it when
// interrupted — what a Ginkgo suite does on Ctrl-C (its interrupt handler runs DeferCleanup).
const helperEnv = "CLEANUP_E2E_LEAK_HELPER_ROOT"

func TestMain(m *testing.M) {
	if root := os.Getenv(helperEnv); root != "" {
		os.Exit(runHelper(root))
	}
	os.Exit(m.Run())
}

func runHelper(root string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// its progress on stderr, so that a start that fails or hangs says which step it was in
	progress := funcr.New(func(prefix, args string) { println(prefix + " " + args) }, funcr.Options{})
	p, err := New(ctx, WithName("leak"), WithWorkRoot(root), WithLogger(progress))
	if err != nil {
		println("helper: " + err.Error())
		return 1
	}
	println("WORKDIR " + p.WorkDir())
	<-ctx.Done()
	if err := p.Stop(context.Background()); err != nil {
		println("helper stop: " + err.Error())
		return 1
	}
	return 0
}

func startHelper(t *testing.T, root string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+root)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The provider's own deadlines (control plane, CRDs, OLM ready) bound the start, and the helper then
	// exits with the provider's error; this one only catches a helper that hangs. 3 min was shorter than
	// those deadlines together: a start that took 3 min 19 s under load (a flake hunt on a slow VM) failed
	// here with no cause.
	timeout := time.After(10 * time.Minute)
	var last []string // the helper's last lines, for a failure that names its cause
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("helper exited before it was ready: %v; its last output:\n%s", cmd.Wait(), strings.Join(last, "\n"))
			}
			if dir, found := strings.CutPrefix(l, "WORKDIR "); found {
				go func() {
					for range lines { // keep draining so the helper never blocks on stderr
					}
				}()
				return cmd, dir
			}
			if last = append(last, l); len(last) > 20 {
				last = last[1:]
			}
		case <-timeout:
			_ = cmd.Process.Kill()
			t.Fatalf("helper did not print WORKDIR within 10 min; its last output:\n%s", strings.Join(last, "\n"))
		}
	}
}

func assertNothingLeft(t *testing.T, workDir string) {
	t.Helper()
	if pids := process.Referencing(workDir); len(pids) > 0 {
		t.Errorf("processes still reference %s: %v", workDir, pids)
	}
	if _, err := os.Stat(workDir); !os.IsNotExist(err) {
		t.Errorf("work dir %s still exists (stat: %v)", workDir, err)
	}
}

// TestInterruptLeavesNothing: Ctrl-C stops etcd, kube-apiserver, kube-controller-manager, olm and the
// operators, and removes the work dir.
func TestInterruptLeavesNothing(t *testing.T) {
	t.Parallel() // each starts its own control plane in its own work root
	root := t.TempDir()
	cmd, workDir := startHelper(t, root)
	if n := len(process.Referencing(workDir)); n < 4 {
		t.Fatalf("expected etcd, kube-apiserver, kube-controller-manager and olm to reference %s, found %d processes", workDir, n)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper did not stop cleanly: %v", err)
	}
	assertNothingLeft(t, workDir)
}

// TestKilledRunIsReaped: a run killed outright (no cleanup at all) leaves processes that the next
// provider start reaps, with its work dir.
func TestKilledRunIsReaped(t *testing.T) {
	t.Parallel() // each starts its own control plane in its own work root
	root := t.TempDir()
	cmd, workDir := startHelper(t, root)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	reaped, err := process.ReapStale(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(reaped) != 1 || reaped[0] != workDir {
		t.Fatalf("reaped %v, want [%s]", reaped, workDir)
	}
	assertNothingLeft(t, workDir)
	entries, _ := os.ReadDir(root)
	if len(entries) != 0 {
		t.Errorf("work root %s still holds %d entries", root, len(entries))
	}
}
