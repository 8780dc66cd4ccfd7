package olmv1

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Labels that make an image a registry+v1 bundle (operator-registry's annotations.yaml, as labels) and
// a file-based catalog (catalogd reads the configs directory from this label).
const (
	bundleMediaTypeLabel = "operators.operatorframework.io.bundle.mediatype.v1"
	bundleManifestsLabel = "operators.operatorframework.io.bundle.manifests.v1"
	bundleMetadataLabel  = "operators.operatorframework.io.bundle.metadata.v1"
	catalogConfigsLabel  = "operators.operatorframework.io.index.configs.v1"
)

// Registry is an in-process, plain-HTTP OCI registry on a loopback port. catalogd and
// operator-controller pull from it over HTTP because Start's registries.conf marks Host insecure.
type Registry struct {
	// Host is "127.0.0.1:<port>".
	Host string
	srv  *http.Server
	done chan struct{}
}

// StartRegistry serves an empty registry on a free loopback port until Stop.
func StartRegistry() (*Registry, error) { return StartRegistryAt("127.0.0.1:0") }

// StartRegistryAt serves an empty registry on addr ("ip:port", port 0 for a free one) until Stop: an
// address pods reach, e.g. the gateway of kind's Docker network, when the managers run in a cluster.
func StartRegistryAt(addr string) (*Registry, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for the OCI registry on %s: %w", addr, err)
	}
	r := &Registry{Host: ln.Addr().String(), done: make(chan struct{}),
		srv: &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}}
	go func() { defer close(r.done); _ = r.srv.Serve(ln) }()
	return r, nil
}

// Stop closes the registry.
func (r *Registry) Stop() error {
	err := r.srv.Close()
	<-r.done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// PushBundle pushes the registry+v1 bundle in dir (manifests/, metadata/) as one-layer image ref.
func (r *Registry) PushBundle(ctx context.Context, dir, ref string) error {
	return pushBundle(ctx, dir, ref)
}

func pushBundle(ctx context.Context, dir, ref string) error {
	files, err := readTree(dir, func(rel string) bool {
		return strings.HasPrefix(rel, "manifests/") || strings.HasPrefix(rel, "metadata/")
	})
	if err != nil {
		return fmt.Errorf("bundle %s: %w", dir, err)
	}
	return push(ctx, ref, files, map[string]string{bundleMediaTypeLabel: "registry+v1", bundleManifestsLabel: "manifests/", bundleMetadataLabel: "metadata/"})
}

// PushCatalog pushes the file-based catalog in dir as image ref, its files under /configs, every
// bundle reference starting with fromRepo (e.g. "fixtures.local/bundle/") rewritten to this registry's
// Host/bundle/ (no opm: an FBC image is only its files and the configs label).
func (r *Registry) PushCatalog(ctx context.Context, dir, ref, fromRepo string) error {
	files, err := readTree(dir, func(rel string) bool { return strings.HasSuffix(rel, ".yaml") || strings.HasSuffix(rel, ".json") })
	if err != nil {
		return fmt.Errorf("catalog %s: %w", dir, err)
	}
	configs := map[string][]byte{}
	for rel, data := range files {
		configs["configs/"+rel] = bytes.ReplaceAll(data, []byte(fromRepo), []byte(r.Host+"/bundle/"))
	}
	return push(ctx, ref, configs, map[string]string{catalogConfigsLabel: "/configs"})
}

// readTree reads the regular files under dir that keep accepts (slash-separated relative paths).
func readTree(dir string, keep func(rel string) bool) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !keep(rel) {
			return nil
		}
		files[rel], err = os.ReadFile(p)
		return err
	})
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no files")
	}
	return files, err
}

// push writes files as the one layer of a linux/amd64 image with labels to ref.
func push(ctx context.Context, ref string, files map[string][]byte, labels map[string]string) error {
	layer, err := tarLayer(files)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Config.Labels = labels
	cf.OS, cf.Architecture = "linux", "amd64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}

// tarLayer is an uncompressed tar of files (sorted, with their parent directories), as a layer.
func tarLayer(files map[string][]byte) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	dirs := map[string]bool{}
	for _, n := range names {
		var parents []string // outermost first
		for d := path.Dir(n); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}
