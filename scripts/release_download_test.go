package scripts_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/scripts/mirror"
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

// The online path to OLM's binaries, against a registry holding an olm image by digest (olmImage): the
// files of this machine's platform, as its last layer left them, are used as is and stamped with the
// pinned version, so the next run keeps them.
func TestOLMBinariesFromTheReleaseImage(t *testing.T) {
	version := pinned(t, "OLM_VERSION")
	cache := t.TempDir()
	// OLM_IMAGE as scripts/images.sh sets it (the kind image it builds) must not be taken for the release's.
	env := []string{"OLM_RELEASE_IMAGE=" + olmImage(t), "OLM_IMAGE=cleanup-e2e.local/olm:" + version}
	if _, err := script(t, cache, env, "build-olm.sh", "olm", "catalog"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "bin", "olm-"+version)
	for b, want := range map[string]string{"olm": "our olm", "catalog": "our catalog"} {
		got, err := os.ReadFile(filepath.Join(dir, b))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q (%v), want %q: linux/%s's file as its last layer left it", b, got, err, want, runtime.GOARCH)
		}
		if stamp, _ := os.ReadFile(filepath.Join(dir, "."+b+".stamp")); strings.TrimSpace(string(stamp)) != version {
			t.Errorf("%s's stamp %q, want %s: the next run would build it again", b, stamp, version)
		}
	}
}

// libFunc runs a function of lib.sh with a cache of its own and env, returning its log.
func libFunc(t *testing.T, env []string, fn string, args ...string) (string, error) {
	t.Helper()
	return script(t, t.TempDir(), env, append([]string{"-c", `. ./lib.sh && "$@"`, "lib", fn}, args...)...)
}

func TestFetchCheckedWritesOnlyWhatItsChecksumSays(t *testing.T) {
	url := mirror.Files(t, map[string]string{
		"/bin/kcm":        "the binary",
		"/bin/kcm.sha256": mirror.SHA256("the binary") + "\n",
		"/bin/bad":        "tampered",
		"/bin/bad.sha256": mirror.SHA256("the binary"),
		"/bin/nosum":      "the binary",
	})
	dir := t.TempDir()
	out := filepath.Join(dir, "kube-controller-manager")
	if _, err := libFunc(t, nil, "fetch_checked", url+"/bin/kcm", out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil || string(got) != "the binary" {
		t.Fatalf("wrote %q (%v), want the served binary", got, err)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s is %v: not executable", out, fi.Mode())
	}
	for file, want := range map[string]string{
		"bad":   "but " + url + "/bin/bad.sha256 says " + mirror.SHA256("the binary"),
		"nosum": "could not download it or its checksum",
		"none":  "could not download it or its checksum",
	} {
		out := filepath.Join(dir, file)
		log, err := libFunc(t, nil, "fetch_checked", url+"/bin/"+file, out)
		if err == nil || !strings.Contains(log, want) || !strings.Contains(log, "/bin/"+file) {
			t.Errorf("%s: %v, log %q; want a failure naming the URL and %q", file, err, log, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the failed downloads left files behind in %s: %v", dir, entries)
	}
}

// olmImage is an index of two platforms' images whose bin/olm differ; on this machine's, a later layer
// replaces bin/olm and deletes bin/gone.
func olmImage(t *testing.T) string {
	other := "linux/arm64"
	if runtime.GOARCH == "arm64" {
		other = "linux/amd64"
	}
	return mirror.Index(t, "operator-framework/olm", "v0.46.0", map[string][]mirror.Layer{
		other: {{"bin/olm": []byte("other olm"), "bin/catalog": []byte("other catalog")}},
		"linux/" + runtime.GOARCH: {
			{"bin/olm": []byte("old olm"), "bin/gone": []byte("x"), "bin/catalog": []byte("our catalog")},
			{"bin/olm": []byte("our olm"), "bin/.wh.gone": nil},
		},
	})
}

func TestImageFilesRefusesWhatItCannotCheckAndWritesNothingForAMissingFile(t *testing.T) {
	ref := olmImage(t)
	dir := t.TempDir()
	tagged := strings.SplitN(ref, "@", 2)[0] + ":v0.46.0"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{tagged, dir, "bin/olm"}, "name it by digest"},
		{[]string{ref, dir, "bin/olm", "bin/gone"}, "has no regular file bin/gone"},
		{[]string{ref, dir, "bin/olm", "bin/cpb"}, "has no regular file bin/cpb"},
	} {
		log, err := libFunc(t, nil, "image_files", c.args...)
		if err == nil || !strings.Contains(log, c.want) {
			t.Errorf("%v: %v, log %q; want a failure saying %q", c.args, err, log, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed downloads wrote %v: an image missing one of the files must write none of them", entries)
	}
}

// A host that takes the connection and never answers fails either download within DOWNLOAD_TIMEOUT, so
// the scripts go on to build.
func TestDownloadsGiveUpOnAHostThatDoesNotAnswer(t *testing.T) {
	stalled := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-stalled }))
	defer s.Close()
	defer close(stalled)
	env := []string{"DOWNLOAD_TIMEOUT=2"}
	start := time.Now()
	if _, err := libFunc(t, env, "fetch_checked", s.URL+"/kcm", filepath.Join(t.TempDir(), "kcm")); err == nil || time.Since(start) > time.Minute {
		t.Fatalf("a file from a host that never answers: error %v after %s, want a failure within DOWNLOAD_TIMEOUT", err, time.Since(start))
	}
	ref := strings.TrimPrefix(s.URL, "http://") + "/olm@sha256:" + strings.Repeat("0", 64)
	start = time.Now() // crane is built within this too
	if _, err := libFunc(t, env, "image_files", ref, t.TempDir(), "bin/olm"); err == nil || time.Since(start) > 2*time.Minute {
		t.Fatalf("an image from a host that never answers: error %v after %s, want a failure within DOWNLOAD_TIMEOUT", err, time.Since(start))
	}
}
