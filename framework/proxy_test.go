package framework_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"

	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// proxyVersion is the version the test publishes. One fixed version, removed from the module cache
// before each run: a new one per run would leave a copy of the module there each time.
const proxyVersion = "v0.0.0-proxytest"

// TestTheModuleAsTheProxyServesIt is an operator repo's first run without a replace directive: this
// checkout's files (tracked, or new and not ignored) zipped by golang.org/x/mod/zip, which leaves out
// what the module proxy leaves out (nested modules such as examples/*, vendor, symlinks), served from a
// file GOPROXY; a consumer module that requires that version; and its uninstall suite
// (testdata/proxyconsumer) run on envtest with the binaries of this checkout's cache, as the docs tell
// a consumer to. It catches what only a published version shows: a file the framework reads that the
// zip leaves out, a path found from the read-only module cache.
func TestTheModuleAsTheProxyServesIt(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	modcache := goEnv(t, "GOMODCACHE")
	unlock := lockProxyVersion(t)
	defer unlock()
	forget := func() { // the module cache trusts what it extracted: a previous run's copy must go
		must(t, os.RemoveAll(filepath.Join(modcache, "github.com", "cleanup-e2e", "cleanup-e2e@"+proxyVersion)))
		old, _ := filepath.Glob(filepath.Join(modcache, "cache", "download", "github.com", "cleanup-e2e", "cleanup-e2e", "@v", proxyVersion+".*"))
		for _, f := range old {
			must(t, os.Remove(f))
		}
	}
	forget()
	defer forget()

	proxy := t.TempDir()
	publish(t, root, proxy)
	consumer := t.TempDir()
	must(t, os.CopyFS(filepath.Join(consumer, "bundle"), os.DirFS(filepath.Join(root, "bundles", "widget-operator", "v0.1.0"))))
	src, err := os.ReadFile(filepath.Join("testdata", "proxyconsumer", "uninstall_test.go"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(consumer, "uninstall_test.go"), src, 0o644))
	must(t, os.WriteFile(filepath.Join(consumer, "go.mod"), []byte("module example.com/consumer\n\ngo 1.26.3\n\nrequire "+
		"github.com/cleanup-e2e/cleanup-e2e "+proxyVersion+"\n"), 0o644))

	// The module from the file proxy; its dependencies from the module cache's download cache, else from
	// the configured proxy: go mod tidy also loads the tests of the dependencies' packages, whose
	// modules a build of this checkout never downloaded (a fresh machine has none of them).
	env := append(os.Environ(), "GOPROXY=file://"+proxy+",file://"+filepath.Join(modcache, "cache", "download")+","+goEnv(t, "GOPROXY"),
		"GOSUMDB=off", "GOWORK=off",
		// The go command's module index takes a module cache directory for immutable: it kept a previous
		// run's imports of this constant version ("could not import errors (open : no such file or
		// directory)" once a file imported a new package).
		"GODEBUG=goindex=0",
		// Go's default compile mode, as the consumer's own go test has it, not make test's (-trimpath
		// and build tags, scripts/lib.sh): a first run compiles the dependencies once more for it.
		"GOFLAGS=-mod=mod -modcacherw -buildvcs=false",
		"CLEANUP_E2E_CACHE="+toolchain.CacheDir(), "CLEANUP_E2E_ROOT=", "ARTIFACTS="+filepath.Join(consumer, "_artifacts"))
	run := func(timeout time.Duration, args ...string) string {
		t.Helper()
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env, cmd.WaitDelay = consumer, env, 10*time.Second
		out, err := cmd.CombinedOutput()
		t.Logf("go %s in the consumer module: %s", strings.Join(args, " "), time.Since(start).Round(time.Second))
		if err != nil {
			t.Fatalf("go %s in a module that requires cleanup-e2e %s from the proxy failed (%v):\n%s",
				strings.Join(args, " "), proxyVersion, err, tail(string(out), 60))
		}
		return string(out)
	}
	run(2*time.Minute, "mod", "tidy")
	out := run(15*time.Minute, "test", "-count=1", "-timeout=10m", ".", "-args", "-ginkgo.no-color")
	if !strings.Contains(out, "ok  \texample.com/consumer") {
		t.Fatalf("the consumer's suite did not report ok:\n%s", tail(out, 40))
	}
}

// publish writes proxy/<module>/@v/{list,.info,.mod,.zip} for proxyVersion from root's files.
func publish(t *testing.T, root, proxy string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing the checkout's files with git (the zip must hold what a commit of it would): %v", err)
	}
	var files []zip.File
	for _, p := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil { // a tracked file deleted in the work tree is not published
			files = append(files, checkoutFile{root: root, path: p})
		}
	}
	mv := module.Version{Path: "github.com/cleanup-e2e/cleanup-e2e", Version: proxyVersion}
	dir := filepath.Join(proxy, mv.Path, "@v")
	must(t, os.MkdirAll(dir, 0o755))
	z, err := os.Create(filepath.Join(dir, proxyVersion+".zip"))
	must(t, err)
	must(t, zip.Create(z, mv, files))
	must(t, z.Close())
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, proxyVersion+".mod"), gomod, 0o644))
	info, err := json.Marshal(map[string]any{"Version": proxyVersion, "Time": time.Now().UTC()})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, proxyVersion+".info"), info, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "list"), []byte(proxyVersion+"\n"), 0o644))
}

type checkoutFile struct{ root, path string }

func (f checkoutFile) Path() string                 { return f.path }
func (f checkoutFile) Lstat() (os.FileInfo, error)  { return os.Lstat(filepath.Join(f.root, f.path)) }
func (f checkoutFile) Open() (io.ReadCloser, error) { return os.Open(filepath.Join(f.root, f.path)) }

// lockProxyVersion serializes the runs of this test on one machine (two make test side by side share
// the module cache, where proxyVersion is extracted).
func lockProxyVersion(t *testing.T) func() {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "cleanup-e2e-proxytest.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	must(t, err)
	must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	return func() { _ = f.Close() }
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env %s: %q, %v", name, out, err)
	}
	return strings.TrimSpace(string(out))
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
