// Package toolchain finds the binaries the providers run (kube-apiserver, etcd, kube-controller-manager,
// olm) and says which script builds them when they are missing or of the wrong version.
package toolchain

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"

	"github.com/cleanup-e2e/cleanup-e2e/internal/srcdir"
)

// Pinned versions; scripts/versions.env holds the same values for the build scripts (a unit test keeps
// the two in sync).
const (
	KubeVersion = "v1.37.1"
	EtcdVersion = "v3.7.3"
	OLMVersion  = "v0.46.0"
)

// CacheDir is where scripts/ put what they build: $CLEANUP_E2E_CACHE, else <repo>/_cache.
func CacheDir() string {
	if d := envvar.Cache.Get(); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(), "_cache")
}

// RepoRoot is the root of this repository, found from this source file (works for `go test` in this
// repo and for consumers using a replace directive to a checkout). $CLEANUP_E2E_ROOT overrides it.
func RepoRoot() string {
	if d := envvar.Root.Get(); d != "" {
		return d
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	return filepath.Clean(filepath.Join(srcdir.Of(file), "..", "..")) // internal/srcdir: also in a -trimpath build
}

// Binary describes one tool: where the build script puts it and how to check its version.
type Binary struct {
	Name    string
	Version string
	// Dir is the cache sub-directory, e.g. "kube-v1.37.1".
	Dir string
	// Script builds it, relative to the repo root, with its arguments.
	Script string
	// VersionArgs print a line containing Version.
	VersionArgs []string
}

var (
	KubeAPIServer         = kube("kube-apiserver")
	KubeControllerManager = kube("kube-controller-manager")
	Kubectl               = func() Binary { b := kube("kubectl"); b.VersionArgs = []string{"version", "--client"}; return b }()
	Etcd                  = Binary{Name: "etcd", Version: strings.TrimPrefix(EtcdVersion, "v"), Dir: "etcd-" + EtcdVersion,
		Script: "scripts/build-etcd.sh", VersionArgs: []string{"--version"}}
	OLM = Binary{Name: "olm", Version: OLMVersion, Dir: "olm-" + OLMVersion, Script: "scripts/build-olm.sh"}
)

func kube(name string) Binary {
	return Binary{Name: name, Version: KubeVersion, Dir: "kube-" + KubeVersion,
		Script: "scripts/build-kube.sh " + name, VersionArgs: []string{"--version"}}
}

// Path returns the binary's location, checking that it exists and reports the pinned version.
// The error names the script that builds it.
func (b Binary) Path() (string, error) {
	p := filepath.Join(CacheDir(), "bin", b.Dir, b.Name)
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s %s not found at %s: %s", b.Name, b.Version, p, howToBuild(b))
	}
	if len(b.VersionArgs) == 0 {
		return p, nil
	}
	if id := fileIdentity(b, fi); !verified(b, id) {
		out, err := exec.Command(p, b.VersionArgs...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), b.Version) {
			return "", fmt.Errorf("%s at %s is not version %s (it says %q): rebuild it with `%s`",
				b.Name, p, b.Version, strings.TrimSpace(firstLine(string(out))), b.Script)
		}
		markVerified(b, id)
	}
	return p, nil
}

// howToBuild says how to get b. A consumer that requires cleanup-e2e without a replace directive runs
// it from the Go module cache, which is read-only and holds no scripts' output: the default cache
// there never fills, so it is told to point CLEANUP_E2E_CACHE at a checkout's.
func howToBuild(b Binary) string {
	if root := RepoRoot(); envvar.Cache.Get() == "" && strings.Contains(filepath.Base(root), "@") {
		return fmt.Sprintf("cleanup-e2e is used from the Go module cache (%s), where nothing is built: run `make tools` in a checkout of cleanup-e2e and set %s=<checkout>/_cache, or point a replace directive at the checkout",
			root, envvar.Cache.Name)
	}
	return fmt.Sprintf("build it with `%s` (or `make tools`)", b.Script)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// EnvtestAssets returns a directory holding kube-apiserver and etcd for controller-runtime's envtest,
// in the order scripts/tools.sh prefers them: a user's own assets ($KUBEBUILDER_ASSETS) when they hold
// both binaries; the ones setup-envtest downloaded (recorded in <cache>/envtest-assets by
// scripts/envtest-download.sh); else a directory assembled (symlinks) from the binaries built from source.
func EnvtestAssets() (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" && hasControlPlane(d) {
		return d, nil
	}
	if data, err := os.ReadFile(filepath.Join(CacheDir(), "envtest-assets")); err == nil {
		if d := strings.TrimSpace(string(data)); d != "" && hasControlPlane(d) {
			return d, nil
		}
	}
	dir := filepath.Join(CacheDir(), "bin", "envtest-"+KubeVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, b := range []Binary{KubeAPIServer, Etcd} {
		p, err := b.Path()
		if err != nil {
			return "", err
		}
		link := filepath.Join(dir, b.Name)
		if cur, err := os.Readlink(link); err == nil && cur == p {
			continue
		}
		if err := replaceSymlink(p, link); err != nil {
			return "", fmt.Errorf("link %s to %s: %w (remove %s and retry)", link, p, err, dir)
		}
	}
	return dir, nil
}

// replaceSymlink points link at target atomically, through a temporary name of its own: the test
// binaries of one `go test ./...` call EnvtestAssets at the same moment on a cold cache, and with a
// shared temporary name one's Symlink or Rename failed on the other's file.
func replaceSymlink(target, link string) error {
	tmpDir, err := os.MkdirTemp(filepath.Dir(link), ".link-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, filepath.Base(link))
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func hasControlPlane(dir string) bool {
	return exists(filepath.Join(dir, "kube-apiserver")) && exists(filepath.Join(dir, "etcd"))
}
