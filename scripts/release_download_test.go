package scripts_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/scripts/download/mirror"
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
	path := "/" + version + "/bin/linux/" + runtime.GOARCH + "/kube-controller-manager"
	url := mirror.Files(t, map[string]string{path: binary, path + ".sha256": mirror.SHA256(binary)})

	cache := t.TempDir()
	if _, err := script(t, cache, []string{"KUBE_RELEASE_URL=" + url}, "build-kube.sh", "kube-controller-manager"); err != nil {
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
	image := mirror.Index(t, "operator-framework/olm", version, map[string][]mirror.Layer{
		"linux/" + runtime.GOARCH: {{"bin/olm": []byte("upstream olm"), "bin/catalog": []byte("upstream catalog")}},
	})

	cache := t.TempDir()
	// OLM_IMAGE as scripts/images.sh sets it (the kind image it builds) must not be taken for the release's.
	env := []string{"OLM_RELEASE_IMAGE=" + image, "OLM_IMAGE=cleanup-e2e.local/olm:" + version}
	if _, err := script(t, cache, env, "build-olm.sh", "olm", "catalog"); err != nil {
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
