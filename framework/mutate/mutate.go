// Package mutate makes variants of an operator's own source with one defect each — a reconciler that
// never makes its workload, a finalizer that removes itself without cleaning up, an object leaked —
// for mutation checks (specs.CheckMutants): a suite that passes against such a variant does not check
// what it claims to. The operator's repository is never changed; each variant is a copy.
package mutate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Edit replaces Old by New in File (relative to the module's root). Old must occur exactly once, so an
// edit that no longer applies after the code changed fails loudly instead of building the unchanged
// operator.
type Edit struct {
	File, Old, New string
}

// Module copies the Go module at dir into out (version control, artifacts and testdata left out),
// points its relative replace directives at their absolute paths so it builds where it lands, and
// applies the edits.
func Module(dir, out string, edits ...Edit) error {
	if err := copyTree(dir, out); err != nil {
		return fmt.Errorf("copy module %s: %w", dir, err)
	}
	if err := absoluteReplaces(dir, out); err != nil {
		return err
	}
	for _, e := range edits {
		path := filepath.Join(out, e.File)
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("mutate %s: %w", e.File, err)
		}
		if n := strings.Count(string(data), e.Old); n != 1 {
			return fmt.Errorf("mutate %s: the text to replace occurs %d times (want exactly once); has the code changed?\n%s",
				e.File, n, e.Old)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(data), e.Old, e.New, 1)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Variant is Module into a directory of the user's cache (os.UserCacheDir, else the temp dir) named
// by a hash of the module's files, its location and the edits, made once and reused while none of
// them changes. The go build cache keys a compiled package by its directory too, so a variant that
// keeps its directory between runs is compiled and linked once instead of on every run. Variants
// unused for a week are removed.
func Variant(dir string, edits ...Edit) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir() // no HOME (some CI runners): still one place per machine
	}
	root := filepath.Join(cache, "cleanup-e2e", "variants")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	key, err := variantKey(dir, edits)
	if err != nil {
		return "", err
	}
	out := filepath.Join(root, key)
	now := time.Now()
	if err := os.Chtimes(out, now, now); err == nil {
		return out, nil // made by an earlier run: its content is what the key says
	}
	pruneVariants(root, now.Add(-7*24*time.Hour))
	// Made aside and renamed into place, so a concurrent run never sees half a copy.
	tmp, err := os.MkdirTemp(root, ".making-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := Module(dir, tmp, edits...); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, out); err != nil {
		if _, statErr := os.Stat(out); statErr == nil {
			return out, nil // another run made the same variant first
		}
		return "", err
	}
	return out, nil
}

// variantKey hashes what a variant's content depends on: the module's absolute location (its relative
// replace directives are made absolute), every file Module copies, and the edits.
func variantKey(dir string, edits []Edit) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "module %s\n", abs)
	err = walkModule(dir, func(rel string, d fs.DirEntry) error {
		if d.IsDir() {
			return nil
		}
		f, err := os.Open(filepath.Join(dir, rel))
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "file %s\n", rel)
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("hash module %s: %w", dir, err)
	}
	if err := json.NewEncoder(h).Encode(edits); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// pruneVariants removes the variants under root last used before cutoff; best effort.
func pruneVariants(root string, cutoff time.Time) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
}

// walkModule calls fn for every directory and regular file of the module at dir that a variant copies
// (version control, artifacts, testdata and built binaries left out), with its path relative to dir.
func walkModule(dir string, fn func(rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "_artifacts", "testdata", "bin":
				if rel != "." {
					return filepath.SkipDir
				}
			}
			return fn(rel, d)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return fn(rel, d)
	})
}

func copyTree(src, dst string) error {
	return walkModule(src, func(rel string, d fs.DirEntry) error {
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}

// absoluteReplaces rewrites each replace directive with a relative path (e.g. => ../..) to the
// absolute one it meant in dir.
func absoluteReplaces(dir, out string) error {
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = out
	raw, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("read go.mod of %s: %w", dir, err)
	}
	var mod struct {
		Replace []struct {
			Old struct{ Path, Version string }
			New struct{ Path, Version string }
		}
	}
	if err := json.Unmarshal(raw, &mod); err != nil {
		return err
	}
	for _, r := range mod.Replace {
		if r.New.Version != "" || !(strings.HasPrefix(r.New.Path, "./") || strings.HasPrefix(r.New.Path, "../")) {
			continue
		}
		abs, err := filepath.Abs(filepath.Join(dir, r.New.Path))
		if err != nil {
			return err
		}
		old := r.Old.Path
		if r.Old.Version != "" {
			old += "@" + r.Old.Version
		}
		edit := exec.Command("go", "mod", "edit", "-replace", old+"="+abs)
		edit.Dir = out
		if msg, err := edit.CombinedOutput(); err != nil {
			return fmt.Errorf("go mod edit -replace %s=%s: %w: %s", old, abs, err, msg)
		}
	}
	return nil
}
