package scripts_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// script runs a toolchain script with a cache of its own and env, returning its log.
func script(t *testing.T, cache string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", args...)
	cmd.Env = append(append(os.Environ(), "CLEANUP_E2E_CACHE="+cache), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("%s: %s", strings.Join(args, " "), out.String())
	return out.String(), err
}

// The online path to kube-controller-manager, against a mirror in dl.k8s.io's layout: the release
// binary, checked against its .sha256, is used as served, and nothing is compiled (no wrapper module).
func TestKubeBinariesFromTheRelease(t *testing.T) {
	version := kubeVersion(t)
	binary := "#!/bin/sh\necho Kubernetes " + version + "\n"
	sum := sha256.Sum256([]byte(binary))
	path := "/" + version + "/bin/linux/" + runtime.GOARCH + "/kube-controller-manager"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case path:
			_, _ = w.Write([]byte(binary))
		case path + ".sha256":
			_, _ = w.Write([]byte(hex.EncodeToString(sum[:])))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	cache := t.TempDir()
	if _, err := script(t, cache, []string{"KUBE_RELEASE_URL=" + srv.URL}, "build-kube.sh", "kube-controller-manager"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(cache, "bin", "kube-"+version, "kube-controller-manager"))
	if err != nil || string(got) != binary {
		t.Fatalf("kube-controller-manager: %q (%v), want the release's binary", got, err)
	}
	if _, err := os.Stat(filepath.Join(cache, "src", "kube-"+version, "go.mod")); err == nil {
		t.Errorf("a wrapper module was generated though the release binary was there: the script went on to build")
	}
	// Cached now: a second run neither downloads nor builds.
	out, err := script(t, cache, []string{"KUBE_RELEASE_URL=http://127.0.0.1:1"}, "build-kube.sh", "kube-controller-manager")
	if err != nil || !strings.Contains(out, "cached at") {
		t.Errorf("second run: %v, want the cached binary used", err)
	}
}

// The online path to OLM's binaries, against a registry holding an olm image by digest: the image's
// bin/olm is used as is and stamped with the pinned version, so the next run keeps it.
func TestOLMBinariesFromTheReleaseImage(t *testing.T) {
	version := pinned(t, "OLM_VERSION")
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	layer, err := crane.Layer(map[string][]byte{"bin/olm": []byte("upstream olm"), "bin/catalog": []byte("upstream catalog")})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}})
	repo := strings.TrimPrefix(srv.URL, "http://") + "/operator-framework/olm"
	tag, err := name.NewTag(repo + ":" + version)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx); err != nil {
		t.Fatal(err)
	}
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}

	cache := t.TempDir()
	if _, err := script(t, cache, []string{"OLM_IMAGE=" + repo + "@" + digest.String()}, "build-olm.sh", "olm", "catalog"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "bin", "olm-"+version)
	for b, want := range map[string]string{"olm": "upstream olm", "catalog": "upstream catalog"} {
		got, err := os.ReadFile(filepath.Join(dir, b))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q (%v), want the image's", b, got, err)
		}
		if stamp, _ := os.ReadFile(filepath.Join(dir, "."+b+".stamp")); strings.TrimSpace(string(stamp)) != version {
			t.Errorf("%s's stamp %q, want %s: the next run would build it again", b, stamp, version)
		}
	}
}
