package scripts_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/scripts/mirror"
)

// The online path to envtest's binaries, against a local release index in controller-tools' format:
// a good archive is fetched by the real setup-envtest and recorded for framework/toolchain; a corrupt
// one (hash mismatch), an unreachable index and one whose host does not resolve fail without recording
// anything, so tools.sh builds from source.
func TestEnvtestDownload(t *testing.T) {
	version := kubeVersion(t)
	good := envtestArchive(t, version)
	archive := "envtest-" + version + "-" + runtime.GOOS + "-" + runtime.GOARCH + ".tar.gz"
	sum := sha512.Sum512([]byte(good))
	archiveURL := mirror.Files(t, map[string]string{"/" + archive: good}) + "/" + archive
	index := func(hash string) string {
		return fmt.Sprintf("releases:\n  %s:\n    %s:\n      hash: %s\n      selfLink: %s\n", version, archive, hash, archiveURL)
	}
	indexes := mirror.Files(t, map[string]string{"/good.yaml": index(hex.EncodeToString(sum[:])), "/bad.yaml": index(strings.Repeat("0", 128))})
	run := func(index string) (string, string, bool) {
		cache := t.TempDir()
		out, err := script(t, cache, []string{"ENVTEST_INDEX=" + index, "DOWNLOAD_TIMEOUT=60"}, "envtest-download.sh")
		recorded, _ := os.ReadFile(filepath.Join(cache, "envtest-assets"))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1], strings.TrimSpace(string(recorded)), err == nil
	}

	dir, recorded, ok := run(indexes + "/good.yaml")
	if !ok || recorded != dir {
		t.Fatalf("good archive: ok=%v, printed %q, recorded %q", ok, dir, recorded)
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Errorf("%s not in %s: %v", b, dir, err)
		}
	}
	for _, index := range []string{indexes + "/bad.yaml", "http://127.0.0.1:1/index.yaml"} {
		if _, recorded, ok := run(index); ok || recorded != "" {
			t.Errorf("%s (a hash that does not match, or no index) must fail and record nothing: ok=%v recorded %q", index, ok, recorded)
		}
	}
	// An index whose host does not resolve (as offline) fails before setup-envtest is even built.
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"} {
		t.Setenv(v, "")
	}
	cache := t.TempDir()
	out, err := script(t, cache, []string{"ENVTEST_INDEX=https://index.invalid/envtest-releases.yaml"}, "envtest-download.sh")
	if err == nil || !strings.Contains(out, "index.invalid does not resolve") {
		t.Errorf("an index whose host does not resolve: err=%v; want a failure naming the host", err)
	}
	if tools, _ := filepath.Glob(filepath.Join(cache, "bin", "tools", "setup-envtest@*")); len(tools) > 0 {
		t.Errorf("setup-envtest was built (%v) though its index's host does not resolve", tools)
	}
}

// envtestArchive is a release archive as controller-tools publishes it, with stand-in binaries (the
// script checks that kube-apiserver reports the wanted version).
func envtestArchive(t *testing.T, version string) string {
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
	return buf.String()
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
