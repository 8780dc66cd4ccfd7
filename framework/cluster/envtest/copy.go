package envtest

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// copyTree copies the directory src into dst (which may exist), keeping relative paths and modes (etcd
// wants its data dir private). Runs of zeros become holes: etcd preallocates its 64 MB write-ahead log,
// of which a seed (seed.go) uses little.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
			return os.Chmod(target, info.Mode().Perm())
		case d.Type()&fs.ModeSocket != 0:
			return nil // etcd's socket (toolchain's etcdOverSocket), left by an etcd that was killed
		}
		return copySparse(path, target, info)
	})
}

func copySparse(src, dst string, info fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	buf := make([]byte, len(zeros))
	for {
		n, err := io.ReadFull(in, buf)
		if n > 0 {
			chunk := buf[:n]
			if allZero(chunk) {
				if _, serr := out.Seek(int64(n), io.SeekCurrent); serr != nil {
					out.Close()
					return serr
				}
			} else if _, werr := out.Write(chunk); werr != nil {
				out.Close()
				return werr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			out.Close()
			return err
		}
	}
	// A trailing hole needs the size set explicitly.
	if err := out.Truncate(info.Size()); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// zeros is compared against: bytes.Equal is vectorized, a loop over the bytes is not.
var zeros = make([]byte, 1<<20)

func allZero(b []byte) bool { return bytes.Equal(b, zeros[:len(b)]) }
