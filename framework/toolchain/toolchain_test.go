package toolchain

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The build scripts and the Go code must agree on versions, or binaries are rebuilt forever or
// rejected as the wrong version.
func TestVersionsMatchScripts(t *testing.T) {
	f, err := os.Open(filepath.Join(RepoRoot(), "scripts", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && !strings.HasPrefix(k, "#") {
			env[k] = v
		}
	}
	for key, want := range map[string]string{"KUBE_VERSION": KubeVersion, "ETCD_VERSION": EtcdVersion, "OLM_VERSION": OLMVersion} {
		if env[key] != want {
			t.Errorf("scripts/versions.env %s=%q, framework/toolchain says %q", key, env[key], want)
		}
	}
}

func TestMissingBinaryNamesItsScript(t *testing.T) {
	t.Setenv("CLEANUP_E2E_CACHE", t.TempDir())
	t.Setenv("KUBEBUILDER_ASSETS", "")
	_, err := KubeAPIServer.Path()
	if err == nil || !strings.Contains(err.Error(), "scripts/build-kube.sh kube-apiserver") {
		t.Fatalf("error %v should name scripts/build-kube.sh", err)
	}
	if _, err := EnvtestAssets(); err == nil || !strings.Contains(err.Error(), "scripts/build-") {
		t.Fatalf("EnvtestAssets error %v should name a build script", err)
	}
}

// A consumer without a replace directive runs the framework from the module cache, where no script
// can build: the error says to use a checkout's cache instead.
func TestMissingBinaryFromTheModuleCacheNamesTheCacheVariable(t *testing.T) {
	t.Setenv("CLEANUP_E2E_CACHE", "")
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("CLEANUP_E2E_ROOT", filepath.Join(t.TempDir(), "pkg", "mod", "github.com", "cleanup-e2e", "cleanup-e2e@v0.3.0"))
	_, err := Etcd.Path()
	if err == nil || !strings.Contains(err.Error(), "module cache") || !strings.Contains(err.Error(), "CLEANUP_E2E_CACHE=<checkout>/_cache") {
		t.Fatalf("error %v should say that the module cache builds nothing and name CLEANUP_E2E_CACHE", err)
	}
}

func TestWrongVersionNamesItsScript(t *testing.T) {
	_, dir := kubeBinDir(t)
	fake := "#!/bin/sh\necho Kubernetes v1.30.0\n"
	if err := os.WriteFile(filepath.Join(dir, "kube-apiserver"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := KubeAPIServer.Path()
	if err == nil || !strings.Contains(err.Error(), "is not version "+KubeVersion) || !strings.Contains(err.Error(), "v1.30.0") ||
		!strings.Contains(err.Error(), "scripts/build-kube.sh") {
		t.Fatalf("error %v should say the version is wrong and name the script", err)
	}
}

func TestUserEnvtestAssetsWin(t *testing.T) {
	dir := t.TempDir()
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBEBUILDER_ASSETS", dir)
	got, err := EnvtestAssets()
	if err != nil || got != dir {
		t.Fatalf("EnvtestAssets() = %q, %v; want the user's %q", got, err, dir)
	}
}

// setup-envtest's download (recorded by scripts/envtest-download.sh) is used when the user has no
// assets of their own, and ignored when the recorded directory lost a binary.
func TestDownloadedEnvtestAssets(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	t.Setenv("CLEANUP_E2E_CACHE", cache)
	t.Setenv("KUBEBUILDER_ASSETS", "")
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cache, "envtest-assets"), []byte(dir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := EnvtestAssets(); err != nil || got != dir {
		t.Fatalf("EnvtestAssets() = %q, %v; want the downloaded %q", got, err, dir)
	}
	if err := os.Remove(filepath.Join(dir, "etcd")); err != nil {
		t.Fatal(err)
	}
	if _, err := EnvtestAssets(); err == nil || !strings.Contains(err.Error(), "scripts/build-") {
		t.Fatalf("an incomplete download must not be used (want the build scripts named), got %v", err)
	}
}

// A binary's version is asked once while it is the same file, and again once it is replaced: a
// rebuilt binary of the wrong version is still refused.
func TestVersionIsAskedOnceUntilTheBinaryChanges(t *testing.T) {
	cache, dir := kubeBinDir(t)
	asked := filepath.Join(cache, "asked")
	bin := filepath.Join(dir, "kube-apiserver")
	writes := 0
	write := func(version string) {
		t.Helper()
		writes++ // each file of another size: a freed inode may be reused within one tick of the file clock
		script := "#!/bin/sh\n#" + strings.Repeat(" ", writes) + "\necho x >> " + asked + "\necho Kubernetes " + version + "\n"
		// A new file, as a build's rename leaves it.
		if err := os.WriteFile(bin+".new", []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(bin+".new", bin); err != nil {
			t.Fatal(err)
		}
	}
	times := func() int {
		data, _ := os.ReadFile(asked)
		return strings.Count(string(data), "x")
	}
	write(KubeVersion)
	for range 3 {
		if _, err := KubeAPIServer.Path(); err != nil {
			t.Fatal(err)
		}
	}
	if n := times(); n != 1 {
		t.Fatalf("three Path calls on one binary asked its version %d times, want 1", n)
	}
	write("v1.30.0")
	if _, err := KubeAPIServer.Path(); err == nil || !strings.Contains(err.Error(), "v1.30.0") {
		t.Fatalf("the binary replaced by v1.30.0: got %v, want the wrong version refused", err)
	}
	write(KubeVersion)
	if _, err := KubeAPIServer.Path(); err != nil {
		t.Fatal(err)
	}
	if n := times(); n != 3 {
		t.Fatalf("after two replacements the version was asked %d times in all, want 3", n)
	}
}

// kubeBinDir makes a cache of the test's own ($CLEANUP_E2E_CACHE) and returns it with the directory
// where the Kubernetes binaries go in it.
func kubeBinDir(t *testing.T) (cache, dir string) {
	t.Helper()
	cache = t.TempDir()
	t.Setenv("CLEANUP_E2E_CACHE", cache)
	dir = filepath.Join(cache, "bin", KubeAPIServer.Dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return cache, dir
}
