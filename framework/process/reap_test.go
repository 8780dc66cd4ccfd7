package process

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Another process's work dir caught between its creation and its owner file being complete (an
// empty owner file, as a reader saw mid-write before it was written atomically) is not stale.
func TestWorkDirBeingCreatedIsNotReaped(t *testing.T) {
	root := t.TempDir()
	creating := filepath.Join(root, "suite-123")
	if err := os.Mkdir(creating, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(creating, OwnerFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	reaped, err := ReapStale(root)
	if err != nil || len(reaped) > 0 {
		t.Fatalf("ReapStale reaped %v (err %v); a work dir being created must stay", reaped, err)
	}
}

// A work dir whose owner is gone is reaped; one whose owner lives (this process) stays.
func TestStaleWorkDirIsReaped(t *testing.T) {
	root := t.TempDir()
	mine, err := NewWorkDir(root, "mine")
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(root, "dead-1")
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, OwnerFile), []byte(strconv.Itoa(deadPid(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	reaped, err := ReapStale(root)
	if err != nil || len(reaped) != 1 || reaped[0] != stale {
		t.Fatalf("ReapStale = %v, %v; want only %s", reaped, err, stale)
	}
	if _, err := os.Stat(filepath.Join(mine, OwnerFile)); err != nil {
		t.Fatalf("the live work dir lost its owner file: %v", err)
	}
}

// deadPid is the pid of a process that has exited (and been waited for).
func deadPid(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

// A reap of a stale work dir kills only the processes that name it, not those of a live one whose
// name it starts (MkdirTemp's suffixes are numbers of any length: envtest-123 and envtest-1234).
func TestReferencingNamesTheWholePath(t *testing.T) {
	const dir = "/tmp/cleanup-e2e/envtest-123"
	for data, want := range map[string]bool{
		"etcd\x00--data-dir=/tmp/cleanup-e2e/envtest-123/etcd\x00":         true,
		"kube-apiserver\x00--cert-dir=/tmp/cleanup-e2e/envtest-123\x00":    true,
		"KUBECONFIG=/tmp/cleanup-e2e/envtest-123/kubeconfig\x00":           true,
		"x --dirs=/tmp/cleanup-e2e/envtest-123,/other":                     true,
		"/tmp/cleanup-e2e/envtest-123":                                     true,
		"etcd\x00--data-dir=/tmp/cleanup-e2e/envtest-1234/etcd\x00":        false,
		"KUBECONFIG=/tmp/cleanup-e2e/envtest-123.old/kubeconfig":           false,
		"/tmp/cleanup-e2e/envtest-1234 and /tmp/cleanup-e2e/envtest-123/x": true,
		"nothing here": false,
	} {
		if got := namesPath(data, dir); got != want {
			t.Errorf("namesPath(%q, %q) = %v, want %v", data, dir, got, want)
		}
	}
}
