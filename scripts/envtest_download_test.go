package scripts_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// The online path to envtest's binaries, against a local release index in controller-tools' format:
// a good archive is fetched by the real setup-envtest and recorded for framework/toolchain; a corrupt
// one (hash mismatch) and an unreachable index fail without recording anything, so tools.sh builds
// from source.
func TestEnvtestDownload(t *testing.T) {
	version := kubeVersion(t)
	good := envtestArchive(t, version)
	archive := "envtest-" + version + "-" + runtime.GOOS + "-" + runtime.GOARCH + ".tar.gz"
	var hash string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.yaml":
			fmt.Fprintf(w, "releases:\n  %s:\n    %s:\n      hash: %s\n      selfLink: http://%s/%s\n", version, archive, hash, r.Host, archive)
		case "/" + archive:
			_, _ = w.Write(good)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	run := func(index string) (string, string, bool) {
		cache := t.TempDir()
		cmd := exec.Command("bash", "envtest-download.sh")
		cmd.Env = append(os.Environ(), "CLEANUP_E2E_CACHE="+cache, "ENVTEST_INDEX="+index, "DOWNLOAD_TIMEOUT=60")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		recorded, _ := os.ReadFile(filepath.Join(cache, "envtest-assets"))
		t.Logf("stderr: %s", stderr.String())
		return strings.TrimSpace(stdout.String()), strings.TrimSpace(string(recorded)), err == nil
	}

	sum := sha512.Sum512(good)
	hash = hex.EncodeToString(sum[:])
	dir, recorded, ok := run(srv.URL + "/index.yaml")
	if !ok || dir == "" || recorded != dir {
		t.Fatalf("good archive: ok=%v, printed %q, recorded %q", ok, dir, recorded)
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Errorf("%s not in %s: %v", b, dir, err)
		}
	}

	hash = strings.Repeat("0", 128)
	if _, recorded, ok := run(srv.URL + "/index.yaml"); ok || recorded != "" {
		t.Errorf("an archive whose hash does not match must fail and record nothing: ok=%v recorded %q", ok, recorded)
	}
	if _, recorded, ok := run("http://127.0.0.1:1/index.yaml"); ok || recorded != "" {
		t.Errorf("an unreachable index must fail and record nothing: ok=%v recorded %q", ok, recorded)
	}
	// An index whose host does not resolve (as offline) fails before setup-envtest is even built.
	t.Setenv("HTTPS_PROXY", "")
	t.Setenv("https_proxy", "")
	t.Setenv("ALL_PROXY", "")
	t.Setenv("all_proxy", "")
	cache := t.TempDir()
	cmd := exec.Command("bash", "envtest-download.sh")
	cmd.Env = append(os.Environ(), "CLEANUP_E2E_CACHE="+cache, "ENVTEST_INDEX=https://index.invalid/envtest-releases.yaml")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "index.invalid does not resolve") {
		t.Errorf("an index whose host does not resolve: err=%v, output %q; want a failure naming the host", err, out)
	}
	if tools, _ := filepath.Glob(filepath.Join(cache, "bin", "tools", "setup-envtest@*")); len(tools) > 0 {
		t.Errorf("setup-envtest was built (%v) though its index's host does not resolve", tools)
	}
}

// envtestArchive is a release archive as controller-tools publishes it, with stand-in binaries (the
// script checks that kube-apiserver reports the wanted version).
func envtestArchive(t *testing.T, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"kube-apiserver": "#!/bin/sh\necho Kubernetes " + version + "\n",
		"etcd":           "#!/bin/sh\necho etcd\n",
		"kubectl":        "#!/bin/sh\necho kubectl\n",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: "controller-tools/envtest/" + name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func kubeVersion(t *testing.T) string { return pinned(t, "KUBE_VERSION") }

// pinned is a version versions.env pins.
func pinned(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("versions.env")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + `=(\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("no %s in versions.env", name)
	}
	return string(m[1])
}
