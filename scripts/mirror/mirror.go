// Package mirror serves local stand-ins for the release hosts the toolchain scripts download from, so
// the online paths are tested without a network: a file server and an OCI registry.
package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
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

// SHA256 is the hex digest a .sha256 file beside a release file holds.
func SHA256(content string) string {
	h := sha256.Sum256([]byte(content))
	return hex.EncodeToString(h[:])
}

// Files serves exactly files (URL path -> content; 404 for any other path) until the test ends and
// returns the server's URL.
func Files(t testing.TB, files map[string]string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// Layer is one image layer: path in the image -> content; a ".wh.<name>" entry deletes <name>.
type Layer map[string][]byte

// Index pushes to a new registry an index of one image per platform ("linux/amd64" -> its layers,
// first to last) as repo:tag, and returns the index's reference by digest.
func Index(t testing.TB, repo, tag string, platforms map[string][]Layer) string {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	ref := strings.TrimPrefix(s.URL, "http://") + "/" + repo
	idx := v1.ImageIndex(empty.Index)
	for platform, layers := range platforms {
		img := v1.Image(empty.Image)
		for _, files := range layers {
			l, err := crane.Layer(files)
			if err != nil {
				t.Fatal(err)
			}
			if img, err = mutate.AppendLayers(img, l); err != nil {
				t.Fatal(err)
			}
		}
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	tagged, err := name.NewTag(ref + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tagged, idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref + "@" + d.String()
}
