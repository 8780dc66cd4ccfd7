package mutate

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// module writes a one-file Go module to a new directory and returns it.
func module(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/m\n\ngo 1.24\n")
	write(t, filepath.Join(dir, "main.go"), body)
	return dir
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestVariantIsReusedUntilTheSourceOrTheEditsChange(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	src := module(t, "package main\n\nfunc main() { println(\"ok\") }\n")
	broken := Edit{File: "main.go", Old: `"ok"`, New: `"broken"`}

	first, err := Variant(src, broken)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(first, "main.go")); got != "package main\n\nfunc main() { println(\"broken\") }\n" {
		t.Fatalf("the edit is not applied in the variant: %q", got)
	}
	// A marker the copy would not have: the second call must reuse the directory, not copy again.
	write(t, filepath.Join(first, "marker"), "")
	again, err := Variant(src, broken)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatalf("the same module and edits made a second variant %s (first %s)", again, first)
	}
	if _, err := os.Stat(filepath.Join(again, "marker")); err != nil {
		t.Fatalf("the variant was made again instead of reused: %v", err)
	}

	unedited, err := Variant(src)
	if err != nil {
		t.Fatal(err)
	}
	if unedited == first {
		t.Fatal("other edits reused the variant of the first ones")
	}
	write(t, filepath.Join(src, "main.go"), "package main\n\nfunc main() { println(\"fine\") }\n")
	if _, err := Variant(src, broken); err == nil {
		t.Fatal("an edit whose text the changed source no longer has did not fail")
	}
	write(t, filepath.Join(src, "main.go"), "package main\n\nfunc main() { println(\"ok\") } // changed\n")
	changed, err := Variant(src, broken)
	if err != nil {
		t.Fatal(err)
	}
	if changed == first {
		t.Fatal("a changed source file reused the variant made from the old one")
	}
}

func TestConcurrentVariantsMakeOneDirectory(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	src := module(t, "package main\n\nfunc main() {}\n")
	dirs := make([]string, 8)
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir, err := Variant(src)
			if err != nil {
				t.Error(err)
			}
			dirs[i] = dir
		}()
	}
	wg.Wait()
	for _, d := range dirs[1:] {
		if d != dirs[0] {
			t.Fatalf("concurrent calls returned %s and %s", dirs[0], d)
		}
	}
	entries, err := os.ReadDir(filepath.Join(cache, "cleanup-e2e", "variants"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("want one variant directory and no half-made copies left, have %d", len(entries))
	}
	if got := read(t, filepath.Join(dirs[0], "go.mod")); got != "module example.com/m\n\ngo 1.24\n" {
		t.Fatalf("the variant's go.mod is %q", got)
	}
}
