// Package mutate makes variants of an operator's own source with one defect each — a reconciler that
// never makes its workload, a finalizer that removes itself without cleaning up, an object leaked —
// for mutation checks (specs.CheckMutants): a suite that passes against such a variant does not check
// what it claims to. The operator's repository is never changed; each variant is a copy.
package mutate

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "_artifacts", "testdata", "bin":
				if rel != "." {
					return filepath.SkipDir
				}
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
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
