package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// release serves files as dl.k8s.io does: each with a .sha256 beside it.
func release(t *testing.T, files map[string]string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s
}

func sum(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

func TestFileWritesOnlyWhatItsChecksumSays(t *testing.T) {
	s := release(t, map[string]string{
		"/bin/kcm":        "the binary",
		"/bin/kcm.sha256": sum("the binary") + "\n",
		"/bin/bad":        "tampered",
		"/bin/bad.sha256": sum("the binary"),
		"/bin/nosum":      "the binary",
	})
	dir := t.TempDir()
	out := filepath.Join(dir, "kube-controller-manager")
	if err := run(context.Background(), []string{"file", "-o", out, s.URL + "/bin/kcm"}, &bytes.Buffer{}); err != nil {
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
		"bad":   "but " + s.URL + "/bin/bad.sha256 says " + sum("the binary"),
		"nosum": "its checksum: GET answered 404",
		"none":  "its checksum: GET answered 404",
	} {
		out := filepath.Join(dir, file)
		err := run(context.Background(), []string{"file", "-o", out, s.URL + "/bin/" + file}, &bytes.Buffer{})
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

// olmImage pushes to a local registry an index of two platforms' images whose bin/olm differ; on
// amd64, a later layer replaces bin/olm and deletes bin/gone. It returns the index's reference by digest.
func olmImage(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	host := strings.TrimPrefix(s.URL, "http://")
	layer := func(files map[string][]byte) v1.Layer {
		l, err := crane.Layer(files)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	amd64, err := mutate.AppendLayers(empty.Image,
		layer(map[string][]byte{"bin/olm": []byte("old olm"), "bin/gone": []byte("x"), "bin/catalog": []byte("amd64 catalog")}),
		layer(map[string][]byte{"bin/olm": []byte("amd64 olm"), "bin/.wh.gone": nil}))
	if err != nil {
		t.Fatal(err)
	}
	arm64, err := mutate.AppendLayers(empty.Image, layer(map[string][]byte{"bin/olm": []byte("arm64 olm")}))
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: arm64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: amd64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}})
	tag, err := name.NewTag(host + "/operator-framework/olm:v0.46.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return host + "/operator-framework/olm@" + d.String()
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
