// Tests of the shell helpers every script sources (scripts/lib.sh), run by `go test ./...`.
package scripts_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// lib runs a bash snippet after sourcing lib.sh, returning its combined output and whether it succeeded.
func lib(t *testing.T, snippet string) (string, bool) {
	t.Helper()
	out, err := exec.Command("bash", "-c", ". ./lib.sh; "+snippet).CombinedOutput()
	return string(out), err == nil
}

func TestRequireFreeSpace(t *testing.T) {
	dir := t.TempDir()
	if out, ok := lib(t, `require_free_space "`+dir+`" 0 "a test" && echo passed`); !ok || !strings.Contains(out, "passed") {
		t.Fatalf("0 GiB must always be free: %s", out)
	}
	out, ok := lib(t, `require_free_space "`+dir+`/not/made/yet" 999999 "the node image"; echo not reached`)
	if ok || strings.Contains(out, "not reached") {
		t.Fatalf("999999 GiB cannot be free, yet it went on: %s", out)
	}
	// A directory that does not exist yet is checked on its nearest existing parent.
	for _, want := range []string{"not enough disk space for the node image", "free on the filesystem of " + dir, "need 999999 GiB", "nothing was changed", "prune.sh"} {
		if !strings.Contains(out, want) {
			t.Errorf("message does not say %q:\n%s", want, out)
		}
	}
}

func TestStepTimesAndPropagatesFailure(t *testing.T) {
	out, ok := lib(t, `step "a failing step" false; echo not reached`)
	if ok || strings.Contains(out, "not reached") || !strings.Contains(out, "==> a failing step") {
		t.Fatalf("step must announce the step and stop on failure: %s", out)
	}
	// Where a script collects failures (`step ... || rc=1`, make lint and make test do), set -e is off
	// inside step: it must still return the command's status.
	out, ok = lib(t, `rc=0; step "a checked step" false || rc=$?; echo "rc=$rc"`)
	if !ok || !strings.Contains(out, "rc=1") || !strings.Contains(out, "<== a checked step FAILED (exit 1)") {
		t.Fatalf("step under || must return the failure and say so: %s", out)
	}
	// Elsewhere set -e stays on inside a function step runs: its first failing command stops it.
	out, ok = lib(t, `f() { false; echo "went on after a failure"; }; step "a function" f; echo not reached`)
	if ok || strings.Contains(out, "went on after a failure") || strings.Contains(out, "not reached") {
		t.Fatalf("a function run by step must stop at its first failure: %s", out)
	}
	// $SECONDS counts whole seconds, so a step may cross one tick more than it lasted, and a loaded
	// machine may stretch `sleep 1` with its log lines past a second tick.
	out, ok = lib(t, `step "a timed step" sleep 1`)
	if !ok || !regexp.MustCompile(`<== a timed step done in [123]s\n`).MatchString(out) {
		t.Fatalf("step must say how long it took (1 s, up to 3 s across ticks under load): %s", out)
	}
}

func TestStampOK(t *testing.T) {
	f := t.TempDir() + "/stamp"
	if _, ok := lib(t, `stamp_ok "`+f+`" v1`); ok {
		t.Fatal("a missing stamp must not be ok")
	}
	if out, ok := lib(t, `echo v1 > "`+f+`" && stamp_ok "`+f+`" v1 && ! stamp_ok "`+f+`" v2`); !ok {
		t.Fatalf("stamp must match its content only: %s", out)
	}
}

// sha256_files prints what sha256sum prints, and reads a file again once it changed (content, size or
// modification time), not otherwise.
func TestSHA256FilesIsSha256sumThatRemembers(t *testing.T) {
	dir := t.TempDir()
	env := `CACHE_DIR="` + dir + `/cache"; mkdir -p "$CACHE_DIR"; cd "` + dir + `" && `
	setup := `mkdir -p "a dir" && printf one > "a dir/x" && printf two > y && `
	out, ok := lib(t, env+setup+`sha256_files "a dir/x" y > got && sha256sum "a dir/x" y > want && cmp got want && echo same`)
	if !ok || !strings.Contains(out, "same") {
		t.Fatalf("the first run differs from sha256sum: %s", out)
	}
	// Remembered: a file whose stat is unchanged is not read again (its old digest comes back even
	// though the digest file was tampered with), and a changed one is.
	out, ok = lib(t, env+`sed -i "s/^\([^ ]*\) [0-9a-f]*$/\1 0000/" cache/sha256sums && sha256_files y && printf three > y && sha256_files y && sha256sum y`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !ok || len(lines) != 3 || !strings.HasPrefix(lines[0], "0000  y") || lines[1] != lines[2] {
		t.Fatalf("want the remembered digest first, then the new content's as sha256sum says; got:\n%s", out)
	}
}

// keep_or_replace keeps a binary whose rebuild came out the same (its modification time too: the envtest
// etcd seeds are keyed on it) and replaces one that changed; either way the new file is gone.
func TestKeepOrReplaceKeepsAnUnchangedBinary(t *testing.T) {
	dir := t.TempDir()
	script := `cd "` + dir + `" && printf same > out && touch -d 2020-01-01 out && printf same > new && keep_or_replace new out &&
		[ ! -e new ] && stat -c %y out | grep -q ^2020 && echo kept &&
		printf changed > new && keep_or_replace new out && [ ! -e new ] && [ "$(cat out)" = changed ] && echo replaced &&
		printf first > new && keep_or_replace new missing && [ "$(cat missing)" = first ] && echo created`
	out, ok := lib(t, script)
	if !ok || !strings.Contains(out, "kept") || !strings.Contains(out, "replaced") || !strings.Contains(out, "created") {
		t.Fatalf("keep_or_replace: %s", out)
	}
}

// wrapper_module writes a module requiring what it is given, a doc.go only where no main.go is, and
// writes it again only when the requirements change (the go command edits go.mod in between).
func TestWrapperModule(t *testing.T) {
	dir := t.TempDir()
	out, ok := lib(t, `d="`+dir+`"; wrapper_module "$d" example.com/a@v1.0.0 example.com/b/v2@v2.1.0 && cat "$d/go.mod" && ls "$d" &&
		echo "// edited by go" >>"$d/go.mod" && wrapper_module "$d" example.com/a@v1.0.0 example.com/b/v2@v2.1.0 && grep -c edited "$d/go.mod" &&
		wrapper_module "$d" example.com/a@v1.1.0 && echo --- && cat "$d/go.mod"`)
	want := "require (\n\texample.com/a v1.0.0\n\texample.com/b/v2 v2.1.0\n)\ndoc.go\ngo.mod\n1\n---\n"
	_, rewritten, _ := strings.Cut(out, "---\n")
	if !ok || !strings.Contains(out, want) || strings.Contains(rewritten, "edited") || !strings.Contains(rewritten, "\texample.com/a v1.1.0\n)") {
		t.Fatalf("want the requirements, doc.go, a go.mod kept while they are the same and rewritten when one changed:\n%s", out)
	}
	main := t.TempDir()
	if out, ok := lib(t, `echo "package main" >"`+main+`/main.go" && wrapper_module "`+main+`" example.com/a@v1.0.0 && ls "`+main+`"`); !ok || strings.Contains(out, "doc.go") {
		t.Fatalf("a doc.go beside main.go would be a second package in one directory: %s", out)
	}
}
