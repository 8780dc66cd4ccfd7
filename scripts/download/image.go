package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// imageFiles writes each of paths, read from the file system of the image ref names by digest (for
// platform, when ref is a multi-platform index), to dir under its base name.
func imageFiles(ctx context.Context, ref, platform, dir string, paths []string) error {
	digest, err := name.NewDigest(ref)
	if err != nil {
		return fmt.Errorf("image %q: %w (name it by digest, as a release manifest does: the digest is what checks the content)", ref, err)
	}
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return fmt.Errorf("-platform %q: %w", platform, err)
	}
	img, err := remote.Image(digest, remote.WithContext(ctx), remote.WithPlatform(*p), remote.WithTransport(transport)) // anonymous: release images are public
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	want := map[string]string{} // path in the image -> output file
	for _, p := range paths {
		want[clean(p)] = filepath.Join(dir, path.Base(p))
	}
	// Extract reads every layer once, in order, and yields the file system they make: a file that a
	// later layer replaces or deletes is the later layer's.
	fs := mutate.Extract(img)
	defer func() { _ = fs.Close() }()
	tr := tar.NewReader(fs)
	found := map[string]string{} // path -> temporary file holding it
	defer func() {
		for _, tmp := range found {
			_ = os.Remove(tmp) // gone once renamed
		}
	}()
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("image %s: read its layers: %w", ref, err)
		}
		out, ok := want[clean(h.Name)]
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		tmp, err := writeTemp(tr, out)
		if err != nil {
			return fmt.Errorf("image %s: %s: %w", ref, h.Name, err)
		}
		found[clean(h.Name)] = tmp
	}
	var missing []string
	for p := range want {
		if _, ok := found[p]; !ok {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("image %s (%s) has no regular file %s", ref, platform, strings.Join(missing, ", "))
	}
	for p, tmp := range found {
		if err := os.Rename(tmp, want[p]); err != nil {
			return err
		}
	}
	return nil
}

// writeTemp copies r to a new executable file beside out.
func writeTemp(r io.Reader, out string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return "", err
	}
	if err := f.Chmod(0o755); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}

// clean makes "./bin/olm", "/bin/olm" and "bin/olm" one name.
func clean(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }
