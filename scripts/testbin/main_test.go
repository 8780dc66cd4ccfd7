package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
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
	// In a git checkout built with -trimpath (the scripts' compile mode), the checkout's VCS state
	// is in a test main's build ID unless -buildvcs=false; test binaries carry no stamp, so it must
	// not change the key: every commit relinked all 43 of a warm make test.
	t.Setenv("GOFLAGS", "-trimpath")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-qm", "first")
	first := keyOf()
	if again := keyOf(); again != first {
		t.Fatalf("nothing changed, but the key did: %s, then %s", first, again)
	}
	write("README.md", "an edit that is not Go\n")
	if dirty := keyOf(); dirty != first {
		t.Fatalf("the checkout became dirty (a file that is not Go), and the key changed: %s, then %s", first, dirty)
	}
	git("add", ".")
	git("commit", "-qm", "second")
	if committed := keyOf(); committed != first {
		t.Fatalf("a commit of a file that is not Go changed the key: %s, then %s", first, committed)
	}
	write("dep/dep.go", "package dep\n\n//go:noinline\nfunc Answer() int { return 43 }\n")
	if changed := keyOf(); changed == first {
		t.Fatalf("a function body of a dependency changed, the key did not: %s", changed)
	}
}

// A kept binary is linked without DWARF (linkFlags), and a failing test still names its file and line:
// what a user reads comes from the line table, which -w keeps.
func TestKeptBinariesLeaveOutDebugInfoAndStillNameTheFailingLine(t *testing.T) {
	pkgs, err := testPackages([]string{"./testdata/failsatline"})
	if err != nil || len(pkgs) != 1 {
		t.Fatalf("testPackages: %v, %v", pkgs, err)
	}
	cache := t.TempDir()
	var buf bytes.Buffer
	ready := newQueue(nil)
	if !link(cache, "", pkgs, &lineWriter{w: &buf}, ready) {
		t.Fatalf("link failed:\n%s", buf.String())
	}
	p, _ := ready.pop()
	f, err := elf.Open(p.binary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range f.Sections {
		if strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			t.Errorf("the kept binary has the debug section %s; linkFlags %q should leave DWARF out", s.Name, linkFlags)
		}
	}
	cmd := exec.Command(p.binary, "-test.run=TestFails")
	cmd.Dir = p.dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the fixture's test should fail:\n%s", out)
	}
	if !strings.Contains(string(out), "fails_test.go:7: the line a user looks for") {
		t.Errorf("the failure should name fails_test.go:7, got:\n%s", out)
	}
}

// A suite run with -ginkgo-procs runs on that many Ginkgo processes and is reported like a plain run:
// the package's other tests with their own results, the suite's test function passing or failing with
// its specs, the package once, at the end.
func TestGinkgoSuiteRunsOnItsProcessesAndIsReportedLikeAPlainRun(t *testing.T) {
	p, cache := fixtureBinary(t, "./testdata/ginkgosuite"), t.TempDir()
	run := func(failing string) (map[string]string, string, error) {
		marks := t.TempDir()
		t.Setenv("TESTBIN_FIXTURE_DIR", marks)
		t.Setenv("TESTBIN_FIXTURE_FAIL", failing)
		var buf bytes.Buffer
		cpu, err := runGinkgo(p, suiteRun{test: "TestSuite", procs: 2}, cache, time.Minute, &lineWriter{w: &buf})
		if cpu <= 0 {
			t.Errorf("runGinkgo says its processes took %v of CPU", cpu)
		}
		results := map[string]string{} // test ("" for the package) -> its last pass or fail
		for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
			var e event
			if json.Unmarshal([]byte(line), &e) != nil {
				t.Fatalf("not a test2json event: %q", line)
			}
			if e.Action == "pass" || e.Action == "fail" {
				if _, twice := results[e.Test]; twice {
					t.Errorf("%q reported twice:\n%s", e.Test, buf.String())
				}
				results[e.Test] = e.Action
			}
		}
		entries, _ := os.ReadDir(marks)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return results, strings.Join(names, " "), err
	}

	results, marks, err := run("")
	if err != nil {
		t.Fatalf("the suite passes, runGinkgo said %v", err)
	}
	if want := map[string]string{"TestPlain": "pass", "TestSuite": "pass", "": "pass"}; !maps.Equal(results, want) {
		t.Errorf("results %v, want %v", results, want)
	}
	if !strings.Contains(marks, "-process-1") || !strings.Contains(marks, "-process-2") {
		t.Errorf("specs should have run on Ginkgo processes 1 and 2, ran as %q", marks)
	}
	if _, err := os.Lstat(filepath.Join(p.dir, ".testbin-"+p.key+".test")); !os.IsNotExist(err) {
		t.Errorf("the link to the binary in the package directory should be gone after the run: %v", err)
	}

	results, _, err = run("c")
	if err == nil {
		t.Error("a failing spec should fail the run")
	}
	if want := map[string]string{"TestPlain": "pass", "TestSuite": "fail", "": "fail"}; !maps.Equal(results, want) {
		t.Errorf("with a failing spec: results %v, want %v", results, want)
	}
}

func TestSuiteProcsSayWhichSuitesRunOnSeveralProcesses(t *testing.T) {
	procs, err := parseSuiteProcs(" ./e2e/cleanup=2, pkg/operandcleanup:TestOperandCleanup=3,")
	if err != nil {
		t.Fatal(err)
	}
	for pkg, want := range map[string]suiteRun{
		"example.com/m/e2e/cleanup":          {procs: 2},
		"example.com/m/pkg/operandcleanup":   {test: "TestOperandCleanup", procs: 3},
		"example.com/m/e2e/cleanup/more":     {procs: 1},
		"example.com/m/e2e/notcleanup":       {procs: 1},
		"example.com/m/other/e2e/cleanupish": {procs: 1},
	} {
		if got := procs.of(pkg); got != want {
			t.Errorf("%s: %+v, want %+v", pkg, got, want)
		}
	}
	if got := (suiteProcs{"cleanup": {procs: 2}, "e2e/cleanup": {procs: 3}}).of("example.com/m/e2e/cleanup"); got.procs != 3 {
		t.Errorf("the longest matching suffix should win, got %+v", got)
	}
	pkgs := []testPackage{{path: "example.com/m/e2e/cleanup"}}
	if err := procs.check(pkgs); err == nil || !strings.Contains(err.Error(), "pkg/operandcleanup") {
		t.Errorf("a suffix naming no package with tests should be an error naming it, got %v", err)
	}
	for _, bad := range []string{"e2e/cleanup", "e2e/cleanup=0", "e2e/cleanup=two", "=2", "./=2"} {
		if _, err := parseSuiteProcs(bad); err == nil || !strings.Contains(err.Error(), "-ginkgo-procs") {
			t.Errorf("%q: want an error naming -ginkgo-procs, got %v", bad, err)
		}
	}
}

// The summary names the package that ended the run (it bounds make test on a busy machine) and the
// longest ones, without the module path they share.
func TestTheSummaryNamesThePackageThatEndedTheRunAndTheLongest(t *testing.T) {
	spans := []span{
		{pkg: "example.com/m/e2e/cleanup", start: 2 * time.Second, end: 142 * time.Second},
		{pkg: "example.com/m/pkg/operandcleanup", start: time.Second, end: 119 * time.Second},
		{pkg: "example.com/m/fixtures", start: 130 * time.Second, end: 145 * time.Second},
		{pkg: "example.com/m/scripts", start: 3 * time.Second, end: 4 * time.Second},
	}
	spans[1].cpu, spans[2].cpu, spans[0].cpu = 70*time.Second, 40*time.Second, 20*time.Second
	want := "testbin: the tests ran 145 s and ended with fixtures (ran 15 s from 130 s); the longest: " +
		"e2e/cleanup 140 s, pkg/operandcleanup 118 s\n" +
		"testbin: the tests took 130 s of CPU with their control planes; the most: pkg/operandcleanup 70 s, fixtures 40 s\n"
	if got := critical(spans, 2); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := critical(spans[:1], 3); !strings.Contains(got, "ended with cleanup (ran 140 s from 2 s)") {
		t.Errorf("one package: %q", got)
	}
	if got := critical(nil, 3); got != "" {
		t.Errorf("no package ran: %q, want nothing", got)
	}
}

// The spans file has every package, the most CPU first, in seconds.
func TestTheSpansFileHasEveryPackage(t *testing.T) {
	spans := []span{
		{pkg: "example.com/m/scripts", start: 3 * time.Second, end: 4 * time.Second, cpu: time.Second},
		{pkg: "example.com/m/e2e/cleanup", start: 2 * time.Second, end: 142 * time.Second, cpu: 70 * time.Second},
	}
	file := filepath.Join(t.TempDir(), "spans.json")
	if err := writeSpans(file, spans); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	want := []map[string]any{
		{"package": "example.com/m/e2e/cleanup", "startSeconds": 2.0, "endSeconds": 142.0, "cpuSeconds": 70.0},
		{"package": "example.com/m/scripts", "startSeconds": 3.0, "endSeconds": 4.0, "cpuSeconds": 1.0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

// A package's CPU includes the processes its test binary started and waited for (its control planes):
// a shell that only waits for a spinning child shell took about what the child took.
func TestCPUOfCountsTheDescendantsAProcessWaitedFor(t *testing.T) {
	const spin = `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done`
	cpu := func(script string) time.Duration {
		cmd := exec.Command("sh", "-c", script)
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		return cpuOf(cmd.ProcessState)
	}
	alone, waited := cpu(spin), cpu("sh -c '"+strings.ReplaceAll(spin, "'", "")+"'; true")
	if alone <= 0 || waited < alone/2 {
		t.Errorf("the spinning shell took %v alone; waited for by another shell, cpuOf says %v", alone, waited)
	}
	if cpuOf(nil) != 0 {
		t.Error("a process that did not start took no CPU")
	}
}

// -foreground: the named packages keep the normal priority, every other runs under nice; a name that
// matches no package is an error.
func TestForegroundKeepsTheNamedPackagesAndNicesTheRest(t *testing.T) {
	pkgs := []testPackage{{path: "m/pkg/operandcleanup"}, {path: "m/e2e/cleanup"}, {path: "m/framework/olm"}}
	if err := niceAllBut(pkgs, "pkg/operandcleanup, e2e/cleanup"); err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if want := p.path == "m/framework/olm"; p.niced != want {
			t.Errorf("%s: niced %t, want %t", p.path, p.niced, want)
		}
	}
	if args := pkgs[2].command("test2json", "-t").Args; strings.Join(args, " ") != "nice -n 5 test2json -t" {
		t.Errorf("a niced package runs %q, want it under nice -n 5", args)
	}
	if args := pkgs[0].command("test2json", "-t").Args; strings.Join(args, " ") != "test2json -t" {
		t.Errorf("a foreground package runs %q, want it as is", args)
	}
	if err := niceAllBut(pkgs, "pkg/operandclean"); err == nil || !strings.Contains(err.Error(), "pkg/operandclean") {
		t.Errorf("a suffix matching no package: got %v, want an error naming it", err)
	}
	fresh := []testPackage{{path: "m/a"}}
	if err := niceAllBut(fresh, ""); err != nil || fresh[0].niced {
		t.Errorf("empty -foreground: niced %t, err %v; want nothing niced", fresh[0].niced, err)
	}
}

// -link-only links what is missing and prints each package's directory and kept binary, running no
// test: make e2e's ginkgo runs the kept binaries as precompiled suites. A second call links nothing.
func TestLinkOnlyPrintsEachPackagesKeptBinary(t *testing.T) {
	pkgs, err := testPackages([]string{"./testdata/failsatline"})
	if err != nil || len(pkgs) != 1 {
		t.Fatalf("testPackages: %v, %v", pkgs, err)
	}
	cache := t.TempDir()
	var first string
	for i := range 2 {
		var out bytes.Buffer
		if !linkOnly(&out, cache, pkgs) {
			t.Fatalf("run %d: the link failed", i+1)
		}
		dir, bin, ok := strings.Cut(strings.TrimSpace(out.String()), " ")
		if abs, _ := filepath.Abs("testdata/failsatline"); !ok || dir != abs || !strings.HasPrefix(bin, cache+"/") {
			t.Fatalf("run %d printed %q; want the package's directory %s and a binary in %s", i+1, out.String(), abs, cache)
		}
		info, err := os.Stat(bin)
		if err != nil || info.Mode()&0o111 == 0 {
			t.Fatalf("run %d: the printed binary %s is not an executable: %v", i+1, bin, err)
		}
		if first == "" {
			first = bin
		} else if bin != first {
			t.Errorf("the second run printed %s, the first %s: the kept binary should be reused", bin, first)
		}
		if i == 0 { // the second run must not link again: a binary it rewrote would be newer
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(bin, old, old); err != nil {
				t.Fatal(err)
			}
		} else if !info.ModTime().Before(time.Now().Add(-time.Minute)) {
			t.Errorf("the second run linked %s again", bin)
		}
	}
}

// linkHelper, set in the environment of this test binary run again, makes it one run linking into the
// cache it names (TestMain): runs sharing a cache are separate processes, each with its own pid in the
// names of what it makes.
const linkHelper = "TESTBIN_TEST_LINK_INTO"

func TestMain(m *testing.M) {
	if cache := os.Getenv(linkHelper); cache != "" {
		pkgs, err := testPackages([]string{"./testdata/failsatline"})
		if err != nil || len(pkgs) != 1 {
			fmt.Fprintf(os.Stderr, "testPackages: %v, %v\n", pkgs, err)
			os.Exit(1)
		}
		held, err := runDir(cache)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ready := newQueue(nil)
		if !link(cache, held, pkgs, &lineWriter{w: os.Stderr}, ready) {
			os.Exit(1)
		}
		p, _ := ready.pop()
		fmt.Println(p.binary)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Two runs sharing a cache (two make test at once, or two checkouts with one CLEANUP_E2E_CACHE) link the
// same package at once, and each ends with a binary it can run; a binary another run then removes from
// the cache (it keeps only a package's newest) still runs from this run's hard link.
func TestRunsSharingACacheNeitherCollideNorLoseABinary(t *testing.T) {
	cache := t.TempDir()
	var (
		wg   sync.WaitGroup
		bins [2]string
		errs [2]error
		outs [2][]byte
	)
	for i := range 2 {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), linkHelper+"="+cache)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			var out []byte
			out, errs[i] = cmd.Output()
			bins[i], outs[i] = strings.TrimSpace(string(out)), stderr.Bytes()
		})
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("run %d's link failed beside the other's: %v\n%s", i+1, errs[i], outs[i])
		}
		if filepath.Dir(filepath.Dir(bins[i])) != cache || !strings.HasPrefix(filepath.Base(filepath.Dir(bins[i])), "run.") {
			t.Fatalf("run %d runs %q; want its own hard link in %s/run.PID", i+1, bins[i], cache)
		}
	}
	kept, _ := filepath.Glob(filepath.Join(cache, "*.test"))
	if len(kept) != 1 {
		t.Fatalf("the cache should keep the package's one binary, has %v", kept)
	}
	if err := os.Remove(kept[0]); err != nil { // what a run on another commit does to an older binary
		t.Fatal(err)
	}
	cmd := exec.Command(bins[0], "-test.run=^$") // runs nothing: only that it still starts
	cmd.Dir = "testdata/failsatline"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the held binary %s should still run once the cache's is removed: %v\n%s", bins[0], err, out)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "*.tmp")); len(left) > 0 {
		t.Errorf("half-linked binaries left in the cache: %v", left)
	}
}

// What a run killed before its cleanup left is removed once its pid is gone, and only that: not a live
// run's, not a file that only looks like one outside the prefix swept.
func TestSweepRemovesOnlyWhatDeadRunsLeft(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	dead, live := exited.Process.Pid, os.Getpid()
	dir := t.TempDir()
	names := map[string]bool{ // name: whether sweep(dir, ".testbin-") must remove it
		fmt.Sprintf("run.%d", dead):             false, // outside the prefix
		fmt.Sprintf(".testbin-k.%d.test", dead): true,
		fmt.Sprintf(".testbin-k.%d.test", live): false,
		fmt.Sprintf("data.%d.tmp", dead):        false, // a user's file in a package directory
		fmt.Sprintf(".testbin-k-%d.test", dead): false, // not a run's name
	}
	for n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sweep(dir, ".testbin-")
	for n, removed := range names {
		_, err := os.Stat(filepath.Join(dir, n))
		if gone := os.IsNotExist(err); gone != removed {
			t.Errorf("%s: removed %t, want %t (dead pid %d, live pid %d)", n, gone, removed, dead, live)
		}
	}
	cache := t.TempDir()
	for _, n := range []string{fmt.Sprintf("run.%d", dead), fmt.Sprintf("x.test.%d.tmp", dead), fmt.Sprintf("run.%d", live)} {
		if err := os.Mkdir(filepath.Join(cache, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	own, err := runDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(cache)
	if len(left) != 1 || filepath.Join(cache, left[0].Name()) != own {
		t.Errorf("runDir should leave only this run's directory %s after a sweep of the dead runs', got %v", own, left)
	}
}

// -gomaxprocs: the processes a package's tests start see GOMAXPROCS=n, under nice too; the caller's
// GOMAXPROCS wins, and 0 leaves the environment as it is.
func TestGOMAXPROCSReachesTheTestsProcessesUnlessTheCallerSetIt(t *testing.T) {
	seen := func(p testPackage) string {
		t.Helper()
		out, err := p.command("sh", "-c", `echo "${GOMAXPROCS-unset}"`).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS") // t.Setenv restores the caller's value afterwards
	pkgs := []testPackage{{path: "m/a"}, {path: "m/b", niced: true}}
	withGOMAXPROCS(pkgs, 1, 2)
	for _, p := range pkgs {
		if got := seen(p); got != "1" {
			t.Errorf("%s (niced %t): its processes see GOMAXPROCS=%s, want 1", p.path, p.niced, got)
		}
	}
	unset := []testPackage{{path: "m/a"}}
	withGOMAXPROCS(unset, 0, 2)
	if got := seen(unset[0]); got != "unset" {
		t.Errorf("-gomaxprocs 0: the processes see GOMAXPROCS=%s, want it unset as in testbin's environment", got)
	}
	t.Setenv("GOMAXPROCS", "3")
	callers := []testPackage{{path: "m/a"}}
	withGOMAXPROCS(callers, 1, 2)
	if got := seen(callers[0]); got != "3" {
		t.Errorf("the caller's GOMAXPROCS=3: the processes see %s, want the caller's", got)
	}
}

// Under -gomaxprocs 1 a package's t.Parallel tests still run side by side, as go test runs them: the
// fixture's two tests each wait for the other to start, and fail when it does not. A Ginkgo suite is
// not given the flag.
func TestParallelTestsStillRunSideBySideUnderGOMAXPROCS1(t *testing.T) {
	suites, err := testPackages([]string{"./testdata/ginkgosuite"})
	if err != nil || len(suites) != 1 {
		t.Fatalf("testPackages: %v, %v", suites, err)
	}
	pkgs := []testPackage{fixtureBinary(t, "./testdata/pairedtests"), suites[0]}
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS") // t.Setenv restores the caller's value afterwards
	withGOMAXPROCS(pkgs, 1, 2)
	if suite := pkgs[1]; !suite.ginkgo || suite.parallel != 0 {
		t.Errorf("%s links Ginkgo (seen: %t), which fails a suite given -test.parallel; it is given %d", suite.path, suite.ginkgo, suite.parallel)
	}
	var buf bytes.Buffer
	if _, err := runBinary(pkgs[0], time.Minute, &lineWriter{w: &buf}, true); err != nil {
		t.Errorf("the fixture's parallel tests ran one at a time under GOMAXPROCS=1 (%v):\n%s", err, buf.String())
	}
}

// A package that fails keeps the length of its last passing run in the history: a failure's seconds
// say nothing of how long it runs, and the next run would start it last.
func TestAFailedPackageKeepsItsLengthFromTheLastPass(t *testing.T) {
	p, cache := fixtureBinary(t, "./testdata/failsatline"), t.TempDir()
	for _, last := range []history{{p.path: {Seconds: 100, CPU: 50}}, {}} {
		h := maps.Clone(last)
		q := newQueue(h)
		q.push(p)
		q.close()
		var buf bytes.Buffer
		if failed, _ := run(q, cache, 1, time.Minute, nil, &lineWriter{w: &buf}, h); !failed {
			t.Fatalf("the fixture's test should fail:\n%s", buf.String())
		}
		m, known := h[p.path]
		if _, before := last[p.path]; before && m != last[p.path] {
			t.Errorf("after a failed run the history says %+v, want the last pass's %+v", m, last[p.path])
		}
		if !known || m.Seconds <= 0 {
			t.Errorf("a package never measured before has %+v (known %t) after a failed run, want its run's measurement", m, known)
		}
	}
}

// fixtureBinary lists the fixture package in dir and links its test binary into a temp dir, for
// runBinary (test2json found).
func fixtureBinary(t *testing.T, dir string) testPackage {
	t.Helper()
	pkgs, err := testPackages([]string{dir})
	if err != nil || len(pkgs) != 1 {
		t.Fatalf("testPackages(%s): %v, %v", dir, pkgs, err)
	}
	p := pkgs[0]
	p.binary = filepath.Join(t.TempDir(), filepath.Base(dir)+".test")
	if msg, err := exec.Command("go", "test", "-c", "-o", p.binary, dir).CombinedOutput(); err != nil {
		t.Fatalf("go test -c %s: %v\n%s", dir, err, msg)
	}
	findTest2json(t)
	return p
}

// findTest2json sets test2json (main finds it once per run) for a test that runs binaries through it.
func findTest2json(t *testing.T) {
	t.Helper()
	if test2json != "" {
		return
	}
	path, err := exec.Command("go", "tool", "-n", "test2json").Output()
	if err != nil {
		t.Fatal(err)
	}
	test2json = strings.TrimSpace(string(path))
}
