// Command testrun runs a module's tests as `go test -json -p N PACKAGES` does, but keeps the linked
// test binaries between runs: `go test` links every test binary again on each run, even when nothing
// changed, and that costs a warm `make test` about a fifth of its time on 2 cores (docs/performance.md).
// `go test -c -o DIR/` relinks only the binaries whose inputs changed (the go command's own build ID
// check). Each binary then runs in its package's directory through `go tool test2json`, as go test
// runs it, its events going to standard output one whole line at a time, for gotestsum:
//
//	gotestsum --raw-command -- go run ./scripts/testrun -o DIR -p 6 [-exec 'env GOMAXPROCS=1'] ./...
//
// The packages start longest first, by their durations in the previous run (kept beside the binaries;
// a package not in it counts as longest): the longest one starting late, as in go list's order, ended
// the run alone. Unlike go test, a package that does not compile stops the run before any test runs (its
// old binary must not run in its place), and go vet is not run (make lint runs all of it).
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// pkg is a package with tests, where its test binary is kept, and how long its run took.
type pkg struct {
	importPath, dir, bin string
	took                 time.Duration
}

func main() {
	out := flag.String("o", "", "directory of the kept test binaries (required)")
	parallel := flag.Int("p", 4, "test binaries run at once")
	timeout := flag.Duration("timeout", 60*time.Minute, "-test.timeout of each binary")
	wrapper := flag.String("exec", "", "run each test binary through this command, as go test -exec does")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: testrun -o DIR [-p N] [-timeout D] [-exec CMD] PACKAGES...")
		os.Exit(2)
	}
	pkgs, err := list(*out, flag.Args())
	if err == nil {
		err = link(pkgs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		os.Exit(1)
	}
	test2json, err := exec.Command("go", "tool", "-n", "test2json").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun: go tool -n test2json:", err)
		os.Exit(1)
	}
	durations := filepath.Join(*out, "durations.json")
	longestFirst(pkgs, durations)
	passed := run(os.Stdout, pkgs, strings.TrimSpace(string(test2json)), strings.Fields(*wrapper), *parallel, *timeout)
	if err := saveDurations(pkgs, durations); err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
	}
	if !passed {
		os.Exit(1)
	}
}

// list finds the packages with tests. go test -c names a binary after the last element of the import
// path; packages that share it get a directory each.
func list(out string, patterns []string) ([]pkg, error) {
	args := append([]string{"list", "-f", "{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}"}, patterns...)
	b, err := exec.Command("go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w%s", err, stderrOf(err))
	}
	var pkgs []pkg
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		importPath, dir, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		base := filepath.Base(importPath)
		group := filepath.Join(out, fmt.Sprint(seen[base]))
		seen[base]++
		pkgs = append(pkgs, pkg{importPath: importPath, dir: dir, bin: filepath.Join(group, base+".test")})
	}
	return pkgs, nil
}

// link brings every kept binary up to date, one go test -c per directory.
func link(pkgs []pkg) error {
	groups := map[string][]string{}
	for _, p := range pkgs {
		groups[filepath.Dir(p.bin)] = append(groups[filepath.Dir(p.bin)], p.importPath)
	}
	for dir, paths := range groups {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		cmd := exec.Command("go", append([]string{"test", "-c", "-o", dir + string(filepath.Separator)}, paths...)...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("linking the test binaries (go test -c, the compiler's message above): %w", err)
		}
	}
	return nil // nothing on stderr: gotestsum lists each of its lines as an error
}

// run runs the binaries, parallel at once, their events to w, and reports whether every one passed.
func run(w io.Writer, pkgs []pkg, test2json string, wrapper []string, parallel int, timeout time.Duration) bool {
	var mu sync.Mutex // one whole event line at a time on stdout
	var wg sync.WaitGroup
	slots := make(chan struct{}, parallel)
	failed := false
	for i := range pkgs {
		p := &pkgs[i]
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			start := time.Now()
			defer func() { p.took = time.Since(start); <-slots; wg.Done() }()
			args := append([]string{"-t", "-p", p.importPath}, wrapper...)
			args = append(args, p.bin, "-test.v=test2json", "-test.timeout="+timeout.String())
			cmd := exec.Command(test2json, args...)
			cmd.Dir, cmd.Stderr = p.dir, os.Stderr
			stdout, err := cmd.StdoutPipe()
			if err == nil {
				err = cmd.Start()
			}
			if err == nil {
				copyLines(w, stdout, &mu)
				err = cmd.Wait()
			}
			if err != nil {
				mu.Lock()
				failed = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return !failed
}

// longestFirst orders pkgs by their durations in the file, longest first; those it lacks go first.
func longestFirst(pkgs []pkg, file string) {
	took := map[string]float64{}
	if b, err := os.ReadFile(file); err == nil {
		_ = json.Unmarshal(b, &took) // unreadable: go list's order
	}
	key := func(p pkg) float64 {
		if s, ok := took[p.importPath]; ok {
			return s
		}
		return math.Inf(1)
	}
	slices.SortStableFunc(pkgs, func(a, b pkg) int { return cmp.Compare(key(b), key(a)) })
}

func saveDurations(pkgs []pkg, file string) error {
	took := map[string]float64{}
	for _, p := range pkgs {
		took[p.importPath] = p.took.Seconds()
	}
	b, err := json.MarshalIndent(took, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

func copyLines(w io.Writer, r io.Reader, mu *sync.Mutex) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			mu.Lock()
			_, _ = w.Write(line)
			mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
