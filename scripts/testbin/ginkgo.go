package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// suiteProcs says which Ginkgo suites run with several Ginkgo processes, by import path suffix
// ("e2e/cleanup=2"). Such a suite runs through the Ginkgo CLI (`ginkgo run --procs N`), which hands
// specs to its processes as they free up: the suite's specs that wait (on OLM, on a quiet window)
// overlap. A suite that shares one cluster across processes (framework/suite's SynchronizedBeforeSuite)
// still starts one control plane; one with a BeforeSuite starts one per process.
type suiteProcs map[string]suiteRun

// suiteRun is how one package's Ginkgo suite runs: the test function that runs it ("" when it is the
// package's only test) and the number of processes.
type suiteRun struct {
	test  string
	procs int
}

// parseSuiteProcs reads "SUFFIX=N" and "SUFFIX:TestName=N", comma separated.
func parseSuiteProcs(s string) (suiteProcs, error) {
	out := suiteProcs{}
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		pkg, n, ok := strings.Cut(item, "=")
		procs, err := strconv.Atoi(n)
		pkg, test, _ := strings.Cut(pkg, ":")
		if !ok || err != nil || procs < 1 || strings.Trim(pkg, "./") == "" {
			return nil, fmt.Errorf("-ginkgo-procs: %q is not PACKAGE=N or PACKAGE:TestSuiteFunction=N (e.g. e2e/cleanup=2)", item)
		}
		out[strings.Trim(pkg, "./")] = suiteRun{test: test, procs: procs}
	}
	return out, nil
}

// of is how pkg's suite runs (procs 1: a plain test binary run); the longest suffix that matches wins.
func (s suiteProcs) of(pkg string) suiteRun {
	r, best := suiteRun{procs: 1}, ""
	for suffix, sr := range s {
		if matches(pkg, suffix) && len(suffix) > len(best) {
			r, best = sr, suffix
		}
	}
	return r
}

// check fails for a suffix that names none of pkgs: a typo would silently run the suite plainly.
func (s suiteProcs) check(pkgs []testPackage) error {
	for suffix := range s {
		if !namesAPackage(pkgs, suffix) {
			return fmt.Errorf("-ginkgo-procs names %s, which is none of the packages with tests", suffix)
		}
	}
	return nil
}

func matches(pkg, suffix string) bool { return pkg == suffix || strings.HasSuffix(pkg, "/"+suffix) }

// namesAPackage: suffix matches one of pkgs (a flag naming none is a typo, not a no-op).
func namesAPackage(pkgs []testPackage, suffix string) bool {
	return slices.ContainsFunc(pkgs, func(p testPackage) bool { return matches(p.path, suffix) })
}

// ginkgoPackage is the package a Ginkgo suite imports (its flags, its RunSpecs).
const ginkgoPackage = "github.com/onsi/ginkgo/v2"

// ginkgoCLI is the Ginkgo CLI of the module's Ginkgo version in dir, made once per run (a copy from go
// run's cache of executables when it is there already, not a link).
func ginkgoCLI(dir string) (string, error) {
	ginkgoOnce.Do(func() {
		dst := filepath.Join(dir, "ginkgo")
		tmp := ownName(dst, "tmp") // runs sharing the cache never see a partial copy (share.go)
		msg, err := exec.Command("go", "run", "-exec", "cp", ginkgoPackage+"/ginkgo", tmp).CombinedOutput()
		if err == nil {
			err = os.Rename(tmp, dst)
		}
		if err != nil {
			_ = os.Remove(tmp)
			ginkgoErr = fmt.Errorf("making the Ginkgo CLI (go run -exec cp github.com/onsi/ginkgo/v2/ginkgo): %v\n%s", err, msg)
			return
		}
		ginkgoPath = dst
	})
	return ginkgoPath, ginkgoErr
}

var (
	ginkgoOnce sync.Once
	ginkgoPath string
	ginkgoErr  error
)

// runGinkgo runs p's suite with r.procs Ginkgo processes and reports it as go test would report its
// test function: its output lines, then pass or fail, so gotestsum and the JUnit report see the same
// test as with a plain run. The package's other tests run first, as a plain run. It says how much CPU
// both took.
func runGinkgo(p testPackage, r suiteRun, cache string, timeout time.Duration, out *lineWriter) (time.Duration, error) {
	start := time.Now()
	var cpu time.Duration
	test, others, err := suiteFunction(p, r.test)
	if err == nil && others {
		cpu, err = runBinary(p, timeout, out, false, "-test.skip=^"+test+"$")
	}
	if test != "" {
		out.event(event{Action: "run", Package: p.path, Test: test})
		suiteCPU, suiteErr := ginkgoRun(p, r.procs, cache, timeout, test, func(line string) {
			out.event(event{Action: "output", Package: p.path, Test: test, Output: line + "\n"})
		})
		cpu += suiteCPU
		if suiteErr != nil {
			err = suiteErr
		}
	}
	elapsed := time.Since(start).Seconds()
	result := "pass"
	if err != nil {
		result = "fail"
		out.event(event{Action: "output", Package: p.path, Test: test, Output: err.Error() + "\n"})
	}
	if test != "" {
		out.event(event{Action: result, Package: p.path, Test: test, Elapsed: elapsed})
	}
	out.event(event{Action: "output", Package: p.path, Output: strings.ToUpper(result) + "\n"})
	out.event(event{Action: result, Package: p.path, Elapsed: elapsed})
	return cpu, err
}

// suiteFunction is the test function of p that runs its Ginkgo suite: named is its name, or "" when
// it is p's only test. others says whether p has other tests.
func suiteFunction(p testPackage, named string) (test string, others bool, err error) {
	cmd := exec.Command(p.binary, "-test.list", ".")
	cmd.Dir = p.dir
	raw, err := cmd.Output()
	if err != nil {
		return "", false, fmt.Errorf("listing the tests of %s: %v", p.path, err)
	}
	var tests []string
	for _, l := range strings.Fields(string(raw)) {
		if strings.HasPrefix(l, "Test") {
			tests = append(tests, l)
		}
	}
	switch {
	case named != "" && slices.Contains(tests, named):
		return named, len(tests) > 1, nil
	case named != "":
		return "", false, fmt.Errorf("-ginkgo-procs names %s:%s, but %s has no such test (it has %v)", p.path, named, p.path, tests)
	case len(tests) != 1:
		return "", false, fmt.Errorf("%s has the tests %v: say which runs the Ginkgo suite, -ginkgo-procs PACKAGE:TestName=N", p.path, tests)
	}
	return tests[0], false, nil
}

// ginkgoRun runs the Ginkgo CLI on p's binary, in p's directory, calling line for each line of its
// output, and says how much CPU the CLI and its processes took. The CLI runs a compiled suite in the
// directory that holds it, so the kept binary is linked there for the run (a hidden *.test name:
// .gitignore has *.test), under a name of this run's: two runs of one checkout run the same suite.
func ginkgoRun(p testPackage, procs int, cache string, timeout time.Duration, test string, line func(string)) (time.Duration, error) {
	cli, err := ginkgoCLI(cache)
	if err != nil {
		return 0, err
	}
	const prefix = ".testbin-"
	sweep(p.dir, prefix) // what runs killed before their cleanup left
	link := filepath.Join(p.dir, ownName(prefix+p.key, "test"))
	if err := os.Symlink(p.binary, link); err != nil {
		return 0, err
	}
	defer os.Remove(link)
	cmd := p.command(cli, "run", "--procs="+strconv.Itoa(procs), "--timeout="+timeout.String(), "--no-color",
		"./"+filepath.Base(link), "--", "-test.run=^"+test+"$")
	cmd.Dir = p.dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line(sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		return cpuOf(cmd.ProcessState), fmt.Errorf("ginkgo run --procs=%d %s: %w", procs, p.path, err)
	}
	return cpuOf(cmd.ProcessState), nil
}
