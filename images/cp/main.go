// Command cp is the one piece of userland OLM's images need: the bundle unpack Job's "util" init
// container runs `/bin/cp -Rv /bin/cpb /util/cpb` in the olm image, and catalog pods with extractContent
// run `cp /bin/copy-content <dir>` (upstream ships busybox's cp in distroless/static:debug for this).
// It copies files and directory trees, keeping file modes, so the olm and opm images stay FROM
// scratch. Supported: cp [-R|-r] [-v] [-f] [-p] SRC... DST (flags may be combined, e.g. -Rv).
package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cp:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	recursive, verbose := false, false
	var paths []string
	for i, a := range args {
		if a == "--" {
			paths = append(paths, args[i+1:]...)
			break
		}
		if len(a) > 1 && strings.HasPrefix(a, "-") {
			for _, f := range a[1:] {
				switch f {
				case 'R', 'r', 'a':
					recursive = true
				case 'v':
					verbose = true
				case 'f', 'p', 'd', 'L', 'P':
					// accepted for compatibility: files are always overwritten and keep their mode
				default:
					return fmt.Errorf("unsupported flag -%c", f)
				}
			}
			continue
		}
		paths = append(paths, a)
	}
	if len(paths) < 2 {
		return fmt.Errorf("usage: cp [-Rv] SRC... DST")
	}
	srcs, dst := paths[:len(paths)-1], paths[len(paths)-1]
	dstInfo, err := os.Stat(dst)
	dstIsDir := err == nil && dstInfo.IsDir()
	if len(srcs) > 1 && !dstIsDir {
		return fmt.Errorf("target %s is not a directory", dst)
	}
	for _, src := range srcs {
		target := dst
		if dstIsDir {
			target = filepath.Join(dst, filepath.Base(src))
		}
		if err := copyPath(src, target, recursive, verbose); err != nil {
			return err
		}
	}
	return nil
}

func copyPath(src, dst string, recursive, verbose bool) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return copyFile(src, dst, info.Mode(), verbose)
	}
	if !recursive {
		return fmt.Errorf("-R not specified; omitting directory %s", src)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		if info.IsDir() {
			if verbose {
				fmt.Printf("'%s' -> '%s'\n", p, target)
			}
			return os.MkdirAll(target, info.Mode().Perm())
		}
		return copyFile(p, target, info.Mode(), verbose)
	})
}

func copyFile(src, dst string, mode fs.FileMode, verbose bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode.Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Chmod(dst, mode.Perm()); err != nil {
		return err
	}
	if verbose {
		fmt.Printf("'%s' -> '%s'\n", src, dst)
	}
	return nil
}
