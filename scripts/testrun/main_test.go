package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKeepsBinariesAndReportsEachPackage: packages that share a last element get a binary each, a
// second link keeps them as they are, every package's events come out, a failing test fails the run,
// and a package that no longer compiles stops it before anything runs.
func TestKeepsBinariesAndReportsEachPackage(t *testing.T) {
	mod := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		p := filepath.Join(mod, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("a/x/x_test.go", "package x\n\nimport \"testing\"\n\nfunc TestPasses(t *testing.T) {}\n")
	write("b/x/x_test.go", "package x\n\nimport \"testing\"\n\nfunc TestFails(t *testing.T) { t.Fatal(\"the cause\") }\n")
	write("c/c.go", "package c\n")
	t.Chdir(mod)
	out := filepath.Join(t.TempDir(), "bin")

	pkgs, err := list(out, []string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 2 || pkgs[0].bin == pkgs[1].bin {
		t.Fatalf("want a binary each for a/x and b/x, got %+v", pkgs)
	}
	if err := link(pkgs); err != nil {
		t.Fatal(err)
	}
	before := stats(t, pkgs)
	if err := link(pkgs); err != nil {
		t.Fatal(err)
	}
	for i, after := range stats(t, pkgs) {
		if !os.SameFile(before[i], after) { // go touches a binary it keeps: its file stays, a relink replaces it
			t.Errorf("%s unchanged: want its binary kept, it was linked again", pkgs[i].importPath)
		}
	}

	test2json, err := exec.Command("go", "tool", "-n", "test2json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var events bytes.Buffer
	if run(&events, pkgs, strings.TrimSpace(string(test2json)), nil, 2, time.Minute) {
		t.Error("a failing test: want the run to fail")
	}
	for _, want := range []string{
		`"Action":"pass","Package":"example.com/m/a/x","Test":"TestPasses"`,
		`"Action":"fail","Package":"example.com/m/b/x","Test":"TestFails"`,
		"the cause",
	} {
		if !strings.Contains(events.String(), want) {
			t.Errorf("events: want %s in\n%s", want, events.String())
		}
	}

	write("a/x/x_test.go", "package x\n\nfunc broken( {}\n")
	if err := link(pkgs); err == nil {
		t.Error("a package that does not compile: want the link to fail")
	}
}

func stats(t *testing.T, pkgs []pkg) []os.FileInfo {
	t.Helper()
	var s []os.FileInfo
	for _, p := range pkgs {
		fi, err := os.Stat(p.bin)
		if err != nil {
			t.Fatal(err)
		}
		s = append(s, fi)
	}
	return s
}

// TestLongestFirst: the packages start by their last durations, longest first, and a package the last
// run did not see before them all.
func TestLongestFirst(t *testing.T) {
	file := filepath.Join(t.TempDir(), "durations.json")
	last := []pkg{{importPath: "short", took: time.Second}, {importPath: "long", took: time.Minute}, {importPath: "middle", took: 10 * time.Second}}
	if err := saveDurations(last, file); err != nil {
		t.Fatal(err)
	}
	pkgs := []pkg{{importPath: "short"}, {importPath: "middle"}, {importPath: "new"}, {importPath: "long"}}
	longestFirst(pkgs, file)
	var got []string
	for _, p := range pkgs {
		got = append(got, p.importPath)
	}
	if want := "new long middle short"; strings.Join(got, " ") != want {
		t.Errorf("order: want %s, got %s", want, strings.Join(got, " "))
	}
}
