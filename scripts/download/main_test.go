package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/scripts/download/mirror"
)

func TestFileWritesOnlyWhatItsChecksumSays(t *testing.T) {
	url := mirror.Files(t, map[string]string{
		"/bin/kcm":        "the binary",
		"/bin/kcm.sha256": mirror.SHA256("the binary") + "\n",
		"/bin/bad":        "tampered",
		"/bin/bad.sha256": mirror.SHA256("the binary"),
		"/bin/nosum":      "the binary",
	})
	dir := t.TempDir()
	out := filepath.Join(dir, "kube-controller-manager")
	if err := run(context.Background(), []string{"file", "-o", out, url + "/bin/kcm"}, &bytes.Buffer{}); err != nil {
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
		"nosum": "its checksum: GET answered 404",
		"none":  "its checksum: GET answered 404",
	} {
		out := filepath.Join(dir, file)
		err := run(context.Background(), []string{"file", "-o", out, url + "/bin/" + file}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "/bin/"+file) {
			t.Errorf("%s: error %v, want one naming the URL and %q", file, err, want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: something was written to %s though the download failed", file, out)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the failed downloads left files behind in %s: %v", dir, entries)
	}
}

// olmImage is an index of two platforms' images whose bin/olm differ; on amd64, a later layer replaces
// bin/olm and deletes bin/gone.
func olmImage(t *testing.T) string {
	return mirror.Index(t, "operator-framework/olm", "v0.46.0", map[string][]mirror.Layer{
		"linux/arm64": {{"bin/olm": []byte("arm64 olm")}},
		"linux/amd64": {
			{"bin/olm": []byte("old olm"), "bin/gone": []byte("x"), "bin/catalog": []byte("amd64 catalog")},
			{"bin/olm": []byte("amd64 olm"), "bin/.wh.gone": nil},
		},
	})
}

func TestImageTakesTheFilesOfItsPlatformAfterEveryLayer(t *testing.T) {
	ref := olmImage(t)
	dir := t.TempDir()
	if err := run(context.Background(), []string{"image", "-platform", "linux/amd64", "-o", dir, ref, "/bin/olm", "bin/catalog"}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"olm": "amd64 olm", "catalog": "amd64 catalog"} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q (%v), want %q: the amd64 image's file as its last layer left it", file, got, err, want)
		}
	}
	if err := run(context.Background(), []string{"image", "-platform", "linux/arm64", "-o", dir, ref, "bin/olm"}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "olm")); string(got) != "arm64 olm" {
		t.Errorf("-platform linux/arm64 wrote %q, want the arm64 image's", got)
	}
}

func TestImageRefusesWhatItCannotCheckAndWritesNothingForAMissingFile(t *testing.T) {
	ref := olmImage(t)
	dir := t.TempDir()
	tagged := strings.SplitN(ref, "@", 2)[0] + ":v0.46.0"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{tagged, "bin/olm"}, "name it by digest"},
		{[]string{ref, "bin/olm", "bin/gone"}, "has no regular file bin/gone"},
		{[]string{ref, "bin/olm", "bin/cpb"}, "has no regular file bin/cpb"},
	} {
		err := run(context.Background(), append([]string{"image", "-platform", "linux/amd64", "-o", dir}, c.args...), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one saying %q", c.args, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed downloads wrote %v: an image missing one of the files must write none of them", entries)
	}
}

// A host that takes the connection and never answers fails either download within the transport's
// header timeout (30 s; shortened here, retries included), not after the whole -timeout, so the scripts go on to build.
func TestFileGivesUpOnAHostThatDoesNotAnswer(t *testing.T) {
	stalled := make(chan struct{})
	s := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-stalled }))
	defer s.Close()
	defer close(stalled)
	before := transport.ResponseHeaderTimeout
	transport.ResponseHeaderTimeout = 200 * time.Millisecond
	defer func() { transport.ResponseHeaderTimeout = before }()
	start := time.Now()
	err := run(context.Background(), []string{"file", "-timeout", "10m", "-o", filepath.Join(t.TempDir(), "kcm"), s.URL + "/kcm"}, &bytes.Buffer{})
	if err == nil || time.Since(start) > time.Minute {
		t.Fatalf("file from a host that never answers: error %v after %s, want a failure long before -timeout", err, time.Since(start))
	}
	start = time.Now()
	ref := strings.TrimPrefix(s.URL, "http://") + "/olm@sha256:" + strings.Repeat("0", 64)
	err = run(context.Background(), []string{"image", "-timeout", "10m", "-o", t.TempDir(), ref, "bin/olm"}, &bytes.Buffer{})
	if err == nil || time.Since(start) > time.Minute {
		t.Fatalf("image from a host that never answers: error %v after %s, want a failure long before -timeout", err, time.Since(start))
	}
}
