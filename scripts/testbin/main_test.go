package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A kept test binary must be linked again when anything linked into it changes, even a function body in
// a dependency that leaves its export data as it was (not inlinable), and only then.
func TestKeyChangesWhenALinkedPackageChanges(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("dep/dep.go", "package dep\n\n//go:noinline\nfunc Answer() int { return 42 }\n")
	write("app/app_test.go", "package app\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/dep\"\n)\n\nfunc TestAnswer(t *testing.T) { _ = dep.Answer() }\n")
	t.Chdir(dir)
	keyOf := func() string {
		t.Helper()
		pkgs, err := testPackages([]string{"./..."})
		if err != nil {
			t.Fatal(err)
		}
		if len(pkgs) != 1 || pkgs[0].path != "example.com/m/app" || pkgs[0].dir != filepath.Join(dir, "app") {
			t.Fatalf("want one package with tests, example.com/m/app in %s; got %+v", filepath.Join(dir, "app"), pkgs)
		}
		return pkgs[0].key
	}
	first := keyOf()
	if again := keyOf(); again != first {
		t.Fatalf("nothing changed, but the key did: %s, then %s", first, again)
	}
	write("dep/dep.go", "package dep\n\n//go:noinline\nfunc Answer() int { return 43 }\n")
	if changed := keyOf(); changed == first {
		t.Fatalf("a function body of a dependency changed, the key did not: %s", changed)
	}
}
