// Command testbin runs a module's tests like `go test -json -count=1 -p N PATTERNS`, with two
// differences that make a warm `make test` faster on a small machine:
//
//   - Linked test binaries are kept, keyed on the build IDs of every package linked into them. `go test`
//     links every test binary again on each run, even when nothing changed: on 2 cores a warm
//     `go test -run '^$' ./...` takes ≈ 27 s (≈ 53 s of CPU). A binary whose inputs
//     changed is linked again (`go test -c`); the others are run as they are.
//   - Packages start longest first (each package's duration and CPU in the previous run are kept beside
//     the binaries), so the longest suite does not start last and end the run alone; kept binaries run
//     while the changed ones are linked, and a changed one longer than every kept one is awaited. Those that mostly waited (under a second of CPU in all) run
//     beside the -p others, on runners of their own (queue.go).
//   - With -ginkgo-procs, named Ginkgo suites run on several Ginkgo processes through the Ginkgo CLI
//     (ginkgo.go), reported as the same test as a plain run.
//
// Output is test2json events on stdout, one whole line at a time, for `gotestsum --raw-command`. Each
// binary runs in its package's directory with -test.count=1 and -test.timeout, through `go tool
// test2json`, as `go test` would run it. go vet is not run here (`make lint` runs all of it). A package
// that does not compile stops the run before any test runs, with the compiler's message (go list's).
//
//	gotestsum --raw-command -- go run ./scripts/testbin -cache DIR -p 4 -timeout 60m ./...
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	cache := flag.String("cache", "", "directory of the kept test binaries (required)")
	parallel := flag.Int("p", 4, "test binaries run at once")
	timeout := flag.Duration("timeout", 60*time.Minute, "-test.timeout of each binary")
	summaryFile := flag.String("summary", "", "file for the line saying what was linked (default standard error; gotestsum counts a line there as an error)")
	procsFlag := flag.String("ginkgo-procs", "", "Ginkgo suites run with several Ginkgo processes, PACKAGE=N,... (import path suffixes)")
	linkedMarker := flag.String("linked-marker", "", "file created once every test binary is linked (the kept ones run meanwhile)")
	foreground := flag.String("foreground", "", "only these packages (import path suffixes, comma-separated) keep the normal CPU priority; the others run under nice 5 (empty: all keep it)")
	spansFile := flag.String("spans", "", "file for every package's span as JSON (start, end and CPU in seconds from the run's start), for trend plots and for finding which package's CPU grew")
	gomaxprocs := flag.Int("gomaxprocs", 0, "GOMAXPROCS of the test binaries and of every process they start (0: inherited; the caller's GOMAXPROCS wins)")
	linkOnlyFlag := flag.Bool("link-only", false, "link the missing test binaries and print 'DIR BINARY' per package (its directory, its kept binary), running nothing: for a runner of its own (make e2e's ginkgo runs them as precompiled suites)")
	flag.Parse()
	if *cache == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: testbin -cache DIR [-p N] [-timeout D] [-summary FILE] [-spans FILE] [-linked-marker FILE] [-ginkgo-procs PACKAGE=N,...] [-foreground PACKAGE,...] [-gomaxprocs N] PACKAGES...\n"+
			"       testbin -cache DIR -link-only PACKAGES...")
		os.Exit(2)
	}
	procs, err := parseSuiteProcs(*procsFlag)
	if err != nil {
		fatal(err)
	}
	// Binaries run in their package's directory: a relative -cache would not name them there.
	if abs, err := filepath.Abs(*cache); err != nil {
		fatal(err)
	} else {
		*cache = abs
	}
	if err := os.MkdirAll(*cache, 0o755); err != nil {
		fatal(err)
	}
	if *summaryFile != "" {
		f, err := os.Create(*summaryFile)
		if err != nil {
			fatal(err)
		}
		defer f.Close()
		summary.SetOutput(f)
	}
	pkgs, err := testPackages(flag.Args())
	if err != nil {
		fatal(err)
	}
	if *linkOnlyFlag {
		if !linkOnly(os.Stdout, *cache, pkgs) {
			os.Exit(1)
		}
		return
	}
	if path, err := exec.Command("go", "tool", "-n", "test2json").Output(); err != nil {
		fatal(fmt.Errorf("go tool -n test2json: %w", err))
	} else {
		test2json = strings.TrimSpace(string(path))
	}
	if err := procs.check(pkgs); err != nil {
		fatal(err)
	}
	// On a CPU-bound run the longest packages bound it; the others, niced, fill the CPU those leave
	// instead of slowing them (the control planes they start inherit the niceness). Named, not taken
	// from the last run's durations: a niced package grows long and would swap places next run.
	if err := niceAllBut(pkgs, *foreground); err != nil {
		fatal(err)
	}
	withGOMAXPROCS(pkgs, *gomaxprocs, runtime.GOMAXPROCS(0))
	held, err := runDir(*cache)
	if err != nil {
		fatal(err)
	}
	out := &lineWriter{w: os.Stdout}
	last := loadHistory(*cache)
	sort.SliceStable(pkgs, func(i, j int) bool { return last.of(pkgs[i].path) > last.of(pkgs[j].path) })
	withStartPriority(pkgs, last)
	ready := newQueue(last)
	linked := make(chan bool, 1)
	go func() {
		ok := link(*cache, held, pkgs, out, ready)
		// Only once every binary is linked: what waits on it (make test's examples) would otherwise
		// compile and link beside these links, which then take about a third longer. A warm run links
		// nothing, so it is written at once.
		if *linkedMarker != "" {
			if err := os.WriteFile(*linkedMarker, nil, 0o644); err != nil {
				fatal(err)
			}
		}
		linked <- ok
	}()
	failed, spans := run(ready, *cache, *parallel, *timeout, procs, out, last)
	last.save(*cache)
	_ = os.RemoveAll(held)
	summary.Print(critical(spans, 5))
	if *spansFile != "" {
		if err := writeSpans(*spansFile, spans); err != nil {
			fatal(err)
		}
	}
	if failed || !<-linked {
		os.Exit(1)
	}
}

// linkOnly links the missing test binaries of pkgs and writes "DIR BINARY" per package to w (a failed
// link's output goes to standard error, not among those lines). It reports whether every one linked.
func linkOnly(w io.Writer, cache string, pkgs []testPackage) bool {
	ready := newQueue(nil)
	ok := link(cache, "", pkgs, &lineWriter{w: os.Stderr}, ready)
	for p, more := ready.pop(); more; p, more = ready.pop() {
		fmt.Fprintf(w, "%s %s\n", p.dir, p.binary)
	}
	return ok
}

// summary says what was linked and kept.
var summary = log.New(os.Stderr, "", 0)

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "testbin:", err)
	os.Exit(1)
}

// waitingRunners run the packages that mostly waited in their last run (queue.popWaiting), beside the
// parallel others.
const waitingRunners = 2

// run runs the binaries as they become ready, parallel at once (and those that mostly wait on
// waitingRunners of their own), records in h what each took, and reports whether any failed and when
// each ran.
func run(ready *queue, cache string, parallel int, timeout time.Duration, procs suiteProcs, out *lineWriter, h history) (bool, []span) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed bool
		spans  []span
		begin  = time.Now()
	)
	runner := func(pop func() (testPackage, bool)) {
		for p, ok := pop(); ok; p, ok = pop() {
			start := time.Now()
			var (
				cpu time.Duration
				err error
			)
			if r := procs.of(p.path); r.procs > 1 {
				cpu, err = runGinkgo(p, r, cache, timeout, out)
			} else {
				cpu, err = runBinary(p, timeout, out, true)
			}
			mu.Lock()
			// A failure's seconds are not the package's length: a long package failing in 1 s on a
			// flag would start last in the next run and end it alone, ≈ 50 % late.
			if _, known := h[p.path]; err == nil || !known {
				h[p.path] = measured{Seconds: time.Since(start).Seconds(), CPU: cpu.Seconds()}
			}
			spans = append(spans, span{pkg: p.path, start: start.Sub(begin), end: time.Since(begin), cpu: cpu})
			failed = failed || err != nil
			mu.Unlock()
		}
	}
	for range max(parallel, 1) {
		wg.Go(func() { runner(ready.pop) })
	}
	for range waitingRunners {
		wg.Go(func() { runner(ready.popWaiting) })
	}
	wg.Wait()
	return failed, spans
}

// span is when a package's tests ran, from the start of the run, and the CPU they took: the test
// binary's and that of every process it started and waited for (its control planes), as wait4 counts.
type span struct {
	pkg        string
	start, end time.Duration
	cpu        time.Duration
}

// critical says which package ended the run and which took longest. On a busy machine the last one
// to end bounds the run, and a package that suddenly takes longer shows here before anyone opens the
// JUnit files.
func critical(spans []span, longest int) string {
	if len(spans) == 0 {
		return ""
	}
	last := slices.MaxFunc(spans, func(a, b span) int { return cmp.Compare(a.end, b.end) })
	trim := commonDir(spans)
	var total time.Duration
	for _, s := range spans {
		total += s.cpu
	}
	return fmt.Sprintf("testbin: the tests ran %s and ended with %s (ran %s from %s); the longest: %s\n"+
		"testbin: the tests took %s of CPU with their control planes; the most: %s\n",
		seconds(last.end), strings.TrimPrefix(last.pkg, trim), seconds(last.end-last.start), seconds(last.start),
		topBy(spans, longest, trim, func(s span) time.Duration { return s.end - s.start }),
		seconds(total), topBy(spans, longest, trim, func(s span) time.Duration { return s.cpu }))
}

// writeSpans writes every span as JSON, longest CPU first: the summary names five, a regression can be
// in any package.
func writeSpans(file string, spans []span) error {
	type row struct {
		Package string  `json:"package"`
		Start   float64 `json:"startSeconds"`
		End     float64 `json:"endSeconds"`
		CPU     float64 `json:"cpuSeconds"`
	}
	rows := make([]row, 0, len(spans))
	for _, s := range spans {
		rows = append(rows, row{s.pkg, s.start.Seconds(), s.end.Seconds(), s.cpu.Seconds()})
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(b.CPU, a.CPU) })
	data, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
}

// topBy names the n packages with the largest value, each with it ("e2e/cleanup 140 s, ...").
func topBy(spans []span, n int, trim string, value func(span) time.Duration) string {
	sorted := slices.Clone(spans)
	slices.SortStableFunc(sorted, func(a, b span) int { return cmp.Compare(value(b), value(a)) })
	var top []string
	for _, s := range sorted[:min(n, len(sorted))] {
		top = append(top, fmt.Sprintf("%s %s", strings.TrimPrefix(s.pkg, trim), seconds(value(s))))
	}
	return strings.Join(top, ", ")
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.0f s", d.Seconds()) }

// commonDir is the import path prefix, up to a slash, that every package shares (the module's path).
func commonDir(spans []span) string {
	prefix := spans[0].pkg
	for _, s := range spans[1:] {
		for !strings.HasPrefix(s.pkg, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		return prefix[:i+1]
	}
	return ""
}

// test2json is the go tool's test2json, found once (`go tool test2json` per binary cost a go process
// each: ≈ 0.1 s of CPU times every package).
var test2json string

// runBinary runs one test binary through test2json in its package's directory, as go test does, with
// args added, and says how much CPU it took (cpuOf). Unless final, the package's own pass or fail is
// left out: more of its tests follow.
func runBinary(p testPackage, timeout time.Duration, out *lineWriter, final bool, args ...string) (time.Duration, error) {
	flags := []string{"-test.v=test2json", "-test.count=1", "-test.paniconexit0", "-test.timeout=" + timeout.String()}
	if p.parallel > 0 {
		flags = append(flags, "-test.parallel="+strconv.Itoa(p.parallel))
	}
	cmd := p.command(test2json, append(append([]string{"-t", "-p", p.path, p.binary}, flags...), args...)...)
	cmd.Dir = p.dir
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		if !final && packageResult(sc.Bytes()) {
			continue
		}
		out.line(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		_, _ = io.Copy(io.Discard, stdout)
	}
	err = cmd.Wait()
	return cpuOf(cmd.ProcessState), err
}

// cpuOf is the user and system CPU of a process that ended and of the descendants it waited for
// (wait4's rusage counts both); a process a test left running to be reaped by init is not in it.
func cpuOf(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// packageResult says whether a test2json line is the package's own pass, fail or skip.
func packageResult(line []byte) bool {
	var e event
	if json.Unmarshal(line, &e) != nil {
		return false
	}
	return e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip")
}

// event is a test2json event (the fields testbin writes itself).
type event struct {
	Time    time.Time `json:",omitempty"`
	Action  string
	Package string
	Test    string  `json:",omitempty"`
	Elapsed float64 `json:",omitempty"`
	Output  string  `json:",omitempty"`
}

// lineWriter writes whole lines only, so that concurrent packages never interleave within a line.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) line(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(append(append([]byte(nil), b...), '\n'))
}

func (l *lineWriter) event(e event) {
	e.Time = time.Now()
	b, _ := json.Marshal(e)
	l.line(b)
}

// niceness of the niced packages: 5, not 10, so that they still get ≈ a quarter of a core beside each
// busy foreground process; at 10 a fixtures test's API server failed 5 starts of 20 s each while 16
// test binaries were being linked.
const niceness = 5

// command runs name with args, under nice when p is niced: nice, not setpriority after the
// start, so that every process it starts (test binary, control plane) has the niceness from the first.
func (p testPackage) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	if p.niced {
		cmd = exec.Command("nice", append([]string{"-n", strconv.Itoa(niceness), name}, args...)...)
	}
	cmd.Env = p.env
	return cmd
}

// withGOMAXPROCS gives every package's tests, and all they start, GOMAXPROCS=n (n > 0), unless the
// caller set GOMAXPROCS: make test sets 1 on a machine of ≤ 2 CPUs (scripts/test.sh says why). Their
// -test.parallel is then set to parallel, which main makes what go test would give (testbin's own
// GOMAXPROCS): testing's default follows GOMAXPROCS, and at 1 a package's t.Parallel tests ran one at a
// time (framework/cluster/envtest's four, each waiting on its own control plane, made it the run's
// longest package). Not to a binary that links Ginkgo: a suite fails on the flag.
func withGOMAXPROCS(pkgs []testPackage, n, parallel int) {
	if n <= 0 || os.Getenv("GOMAXPROCS") != "" {
		return
	}
	env := append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(n))
	for i := range pkgs {
		pkgs[i].env = env
		if !pkgs[i].ginkgo {
			pkgs[i].parallel = parallel
		}
	}
}

// withStartPriority gives each package's tests its seconds in the last run as the priority of their
// control planes' starts (framework/toolchain priority.go): the longest packages get theirs first.
func withStartPriority(pkgs []testPackage, last history) {
	for i := range pkgs {
		env := pkgs[i].env
		if env == nil {
			env = os.Environ()
		}
		// Clipped: withGOMAXPROCS gave every package the same slice, which an append would share.
		pkgs[i].env = append(slices.Clip(env), fmt.Sprintf("%s=%d", startPriorityVar, int(min(last.of(pkgs[i].path), 1e6))))
	}
}

// startPriorityVar is framework/envvar.StartPriority (testbin, a tool of make test, does not import
// the framework).
const startPriorityVar = "CLEANUP_E2E_START_PRIORITY"

// niceAllBut marks every package niced but those foreground names (comma-separated import path
// suffixes); an empty foreground marks none. A suffix that names no package is an error: a typo would
// silently nice the package it meant.
func niceAllBut(pkgs []testPackage, foreground string) error {
	if strings.TrimSpace(foreground) == "" {
		return nil
	}
	var suffixes []string
	for s := range strings.SplitSeq(foreground, ",") {
		if s = strings.Trim(strings.TrimSpace(s), "./"); s != "" {
			suffixes = append(suffixes, s)
		}
	}
	for _, s := range suffixes {
		if !namesAPackage(pkgs, s) {
			return fmt.Errorf("-foreground names %s, which is none of the packages with tests", s)
		}
	}
	for i := range pkgs {
		pkgs[i].niced = !slices.ContainsFunc(suffixes, func(s string) bool { return matches(pkgs[i].path, s) })
	}
	return nil
}
