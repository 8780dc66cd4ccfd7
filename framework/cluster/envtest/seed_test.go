package envtest

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/go-logr/logr/testr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cleanup-e2e/cleanup-e2e/fixtures/crds"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// copyTree keeps contents and modes, and a file of zeros (etcd's preallocated log) takes no blocks;
// the socket a killed etcd left (toolchain's etcdOverSocket) is not copied.
func TestCopyTreeKeepsContentsAndModesAndLeavesZerosAsHoles(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "member", "wal"), 0o700))
	sock, err := net.Listen("unix", filepath.Join(src, "etcd.sock"))
	must(t, err)
	defer sock.Close()
	data := append(bytes.Repeat([]byte{0}, 3<<20), []byte("tail")...)
	data = append([]byte("head"), data...)
	must(t, os.WriteFile(filepath.Join(src, "member", "wal", "0.wal"), data, 0o600))
	must(t, os.WriteFile(filepath.Join(src, "member", "db"), []byte("db"), 0o640))

	must(t, copyTree(src, filepath.Join(dst, "etcd")))

	got, err := os.ReadFile(filepath.Join(dst, "etcd", "member", "wal", "0.wal"))
	must(t, err)
	if !bytes.Equal(got, data) {
		t.Fatalf("the copy differs: %d bytes, want %d", len(got), len(data))
	}
	var st syscall.Stat_t
	must(t, syscall.Stat(filepath.Join(dst, "etcd", "member", "wal", "0.wal"), &st))
	if used := st.Blocks * 512; used >= 2<<20 {
		t.Errorf("the copy of 3 MiB of zeros uses %d bytes on disk: the zeros should be holes", used)
	}
	if _, err := os.Lstat(filepath.Join(dst, "etcd", "etcd.sock")); !os.IsNotExist(err) {
		t.Errorf("etcd's socket was copied (lstat: %v)", err)
	}
	for path, want := range map[string]os.FileMode{"member": 0o700, "member/wal/0.wal": 0o600, "member/db": 0o640} {
		fi, err := os.Stat(filepath.Join(dst, "etcd", path))
		must(t, err)
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
}

// The seed's name changes with the CRDs written into it, and not with their order.
func TestSeedDirDependsOnTheCRDs(t *testing.T) {
	assets := t.TempDir()
	for _, b := range []string{"kube-apiserver", "etcd"} {
		must(t, os.WriteFile(filepath.Join(assets, b), []byte(b), 0o755))
	}
	a, b := crds.Schemaless("a.test", "as", "A"), crds.Schemaless("b.test", "bs", "B")
	ab, err := seedDir(assets, []*apiextensionsv1.CustomResourceDefinition{a, b})
	must(t, err)
	ba, err := seedDir(assets, []*apiextensionsv1.CustomResourceDefinition{b, a})
	must(t, err)
	onlyA, err := seedDir(assets, []*apiextensionsv1.CustomResourceDefinition{a})
	must(t, err)
	if ab != ba || ab == onlyA {
		t.Errorf("seed dirs: {a,b} %s, {b,a} %s, {a} %s: want the first two equal and the third different", ab, ba, onlyA)
	}
}

// Without a usable seed (here: no binaries to make one with), the control plane starts from an empty
// data dir, as it would without seeding.
func TestNoSeedLeavesTheDataDirEmpty(t *testing.T) {
	t.Setenv("CLEANUP_E2E_CACHE", t.TempDir())
	dataDir := filepath.Join(t.TempDir(), "etcd")
	must(t, os.MkdirAll(dataDir, 0o700))
	if seedInto(dataDir, t.TempDir(), t.TempDir(), nil, testr.New(t)) {
		t.Error("seedInto says the data dir was filled from a seed; there was none to be had")
	}
	entries, err := os.ReadDir(dataDir)
	must(t, err)
	if len(entries) != 0 {
		t.Errorf("the data dir holds %d entries, want none", len(entries))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// On an empty cache the first start makes the seed (a control plane of its own, in the work dir) and
// fills the data dir from it; the seed is kept, and the work dir holds nothing of its making after.
func TestTheFirstStartMakesTheSeedAndTheNextUseIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	assets, err := toolchain.EnvtestAssets()
	must(t, err)
	t.Setenv("CLEANUP_E2E_CACHE", t.TempDir())
	workDir := t.TempDir()
	for i := range 2 {
		dataDir := filepath.Join(t.TempDir(), "etcd")
		must(t, os.MkdirAll(dataDir, 0o700))
		if !seedInto(dataDir, workDir, assets, nil, testr.New(t)) {
			t.Errorf("start %d: seedInto says the data dir was not filled from the seed", i+1)
		}
		if _, err := os.Stat(filepath.Join(dataDir, "member", "snap", "db")); err != nil {
			t.Fatalf("start %d: the data dir was not filled from the seed: %v", i+1, err)
		}
	}
	seeds, err := filepath.Glob(filepath.Join(os.Getenv("CLEANUP_E2E_CACHE"), "envtest-seed", "*", "member"))
	must(t, err)
	if len(seeds) != 1 {
		t.Errorf("the cache holds %d seeds, want 1: %v", len(seeds), seeds)
	}
	if entries, _ := os.ReadDir(workDir); len(entries) != 0 {
		t.Errorf("the work dir keeps %d entries of the seed's control plane", len(entries))
	}
}
