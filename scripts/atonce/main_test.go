package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestParseNamesTheRunThatIsShort(t *testing.T) {
	runs, err := parse([]string{"a", "a.log", "true", "---", "b", "b.log", "sh", "-c", "exit 0", "---"})
	if err != nil || len(runs) != 2 || runs[1].name != "b" || strings.Join(runs[1].argv, " ") != "sh -c exit 0" {
		t.Fatalf("two runs, a trailing separator allowed: got %+v, %v", runs, err)
	}
	_, err = parse([]string{"a", "a.log", "true", "---", "b", "b.log"})
	if err == nil || !strings.Contains(err.Error(), `run 2 ("b b.log")`) || !strings.Contains(err.Error(), "NAME LOG CMD") {
		t.Fatalf("want an error naming run 2 and the form, got %v", err)
	}
	if _, err := parse(nil); err == nil {
		t.Fatal("no run must be an error")
	}
}

func TestEachRunIsReportedAndAFailureFails(t *testing.T) {
	dir := t.TempDir()
	runs := []run{
		{"a", filepath.Join(dir, "a.log"), []string{"sh", "-c", "echo output of a"}},
		{"b", filepath.Join(dir, "b.log"), []string{"sh", "-c", "echo output of b; exit 3"}},
		{"c", filepath.Join(dir, "c.log"), []string{filepath.Join(dir, "missing")}},
		{"d", "-", []string{"sh", "-c", "echo output of d; echo d says >&2"}},
	}
	var out, log lockedLog // d writes to both from exec's copying goroutines, beside atonce's own lines
	if status := runAll(runs, nil, time.Second, &out, &log); status != 1 {
		t.Errorf("status %d, want 1 (b failed, c could not start)", status)
	}
	for _, want := range []string{"output of a\n", "output of b\n", "output of d\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not hold %q:\n%s", want, out.String())
		}
	}
	for _, want := range []string{"==> a (output: " + runs[0].log, "<== a passed in ", "<== b FAILED (exit status 3) in ",
		"<== c FAILED (could not start: ", "==> d\n", "d says\n", "<== d passed in "} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
}

// cleaner is a run that, on SIGTERM, records it and takes cleanup seconds to end, as Ginkgo does
// (a second signal would make Ginkgo skip its cleanup).
func cleaner(dir, name string, cleanup string) []string {
	script := `trap 'echo TERM >>` + name + `.terms; stop=1' TERM
stop=0; echo >` + name + `.ready
while [ $stop = 0 ]; do sleep 0.02; done
end=$(( $(date +%s%N) + ` + cleanup + ` ))
while [ $(date +%s%N) -lt $end ]; do sleep 0.02; done`
	return []string{"bash", "-c", "cd " + dir + " && " + script}
}

// waitFiles waits until every path exists (the runs are ready for a signal).
func waitFiles(t *testing.T, paths ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range paths {
		for {
			if _, err := os.Stat(p); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never appeared: the run did not start", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// (Each run cleans up for 0.5 s after its SIGTERM: atonce must wait for it, and send no second one.)
func TestASignalGivesEveryRunOneSIGTERMAndExits130(t *testing.T) {
	dir := t.TempDir()
	runs := []run{
		{"a", filepath.Join(dir, "a.log"), cleaner(dir, "a", "500000000")},
		{"b", filepath.Join(dir, "b.log"), cleaner(dir, "b", "500000000")},
	}
	signals := make(chan os.Signal, 3)
	status := make(chan int, 1)
	var log bytes.Buffer
	go func() { status <- runAll(runs, signals, 10*time.Second, &bytes.Buffer{}, &log) }()
	waitFiles(t, filepath.Join(dir, "a.ready"), filepath.Join(dir, "b.ready"))
	signals <- syscall.SIGINT
	if got := <-status; got != 130 {
		t.Fatalf("status %d, want 130:\n%s", got, log.String())
	}
	for _, name := range []string{"a", "b"} {
		terms, err := os.ReadFile(filepath.Join(dir, name+".terms"))
		if err != nil || string(terms) != "TERM\n" {
			t.Errorf("run %s got SIGTERM %d time(s) (%v), want once:\n%s", name, strings.Count(string(terms), "TERM"), err, log.String())
		}
	}
	if !strings.Contains(log.String(), "<== a stopped (output: ") {
		t.Errorf("the log does not say run a stopped:\n%s", log.String())
	}
}

// lockedLog is atonce's output or log, readable while atonce still writes it (a test that timed out
// prints it), written by atonce and a run with LOG "-" at once.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// slowRun starts runAll on one run that cleans up for 60 s after its SIGTERM, atonce's grace being
// grace, and returns once the run is ready for a signal: its directory, the signal channel, atonce's
// status, and atonce's log.
func slowRun(t *testing.T, grace time.Duration) (string, chan<- os.Signal, <-chan int, *lockedLog) {
	t.Helper()
	dir := t.TempDir()
	runs := []run{{"slow", filepath.Join(dir, "slow.log"), cleaner(dir, "slow", "60000000000")}}
	signals := make(chan os.Signal, 1)
	status := make(chan int, 1)
	log := &lockedLog{}
	go func() { status <- runAll(runs, signals, grace, &bytes.Buffer{}, log) }()
	waitFiles(t, filepath.Join(dir, "slow.ready"))
	return dir, signals, status, log
}

// killedSaying waits for atonce's status and checks that it is 130 and that its log says want; what
// failed to happen is named by missing, with the log, when atonce has not ended within 20 s.
func killedSaying(t *testing.T, status <-chan int, log *lockedLog, want, missing string) {
	t.Helper()
	select {
	case got := <-status:
		if got != 130 || !strings.Contains(log.String(), want) {
			t.Fatalf("status %d, want 130 and %q said:\n%s", got, want, log.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s (the run cleans up for 60 s); atonce's log so far:\n%s", missing, log.String())
	}
}

func TestARunThatOutlastsTheGraceIsKilled(t *testing.T) {
	_, signals, status, log := slowRun(t, 300*time.Millisecond)
	signals <- syscall.SIGTERM
	killedSaying(t, status, log, "slow still runs after 300ms: SIGKILL", "a run was not killed after a 300 ms grace")
}

func TestASecondSignalKillsTheRunsAtOnce(t *testing.T) {
	dir, signals, status, log := slowRun(t, time.Minute)
	signals <- syscall.SIGINT
	waitFiles(t, filepath.Join(dir, "slow.terms")) // the run got its SIGTERM and cleans up
	signals <- syscall.SIGINT
	killedSaying(t, status, log, "slow still runs at a second interrupt (interrupt): SIGKILL", "a second interrupt did not kill a run (grace 1 min)")
}

func TestASignalBeforeARunStartsStartsNone(t *testing.T) {
	dir := t.TempDir()
	signals := make(chan os.Signal, 1)
	signals <- syscall.SIGINT
	runs := []run{{"a", filepath.Join(dir, "a.log"), []string{"true"}}}
	if got := runAll(runs, signals, time.Second, &bytes.Buffer{}, &bytes.Buffer{}); got != 130 {
		t.Fatalf("status %d, want 130", got)
	}
	if _, err := os.Stat(runs[0].log); err == nil {
		t.Fatal("run a was started after the signal")
	}
}

// A run whose first process ends at its SIGTERM while a child goes on (Ginkgo compiling, its
// `go test -c` running) is stopped only once the child is gone too.
func TestARunIsStoppedOnlyWhenItsProcessGroupIsEmpty(t *testing.T) {
	dir := t.TempDir()
	// child.pid appears whole (renamed into place): waitFiles sees a file as soon as it is created.
	script := `(trap '' TERM; echo >child.ready; exec sleep 60) & echo $! >child.pid.tmp && mv child.pid.tmp child.pid; wait`
	runs := []run{{"leader", filepath.Join(dir, "leader.log"), []string{"sh", "-c", "cd " + dir + " && { " + script + "; }"}}}
	signals := make(chan os.Signal, 1)
	log := &lockedLog{}
	status := make(chan int, 1)
	go func() { status <- runAll(runs, signals, 300*time.Millisecond, &bytes.Buffer{}, log) }()
	waitFiles(t, filepath.Join(dir, "child.ready"), filepath.Join(dir, "child.pid"))
	pid, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil || strings.TrimSpace(string(pid)) == "" {
		t.Fatalf("child.pid: %q, %v", pid, err)
	}
	signals <- syscall.SIGINT
	killedSaying(t, status, log, "leader still runs after 300ms: SIGKILL", "the child that ignores SIGTERM was not killed after a 300 ms grace")
	if state := processState(strings.TrimSpace(string(pid))); state != "" && state != "Z" {
		t.Errorf("atonce returned while the run's child %s still runs (state %s):\n%s", pid, state, log.String())
	}
}

// processState is a process's state letter from /proc ("" when it is gone).
func processState(pid string) string {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ""
	}
	_, after, found := strings.Cut(string(stat), ") ")
	if !found || after == "" {
		return "?" // not a process's stat: never taken for a process that is gone
	}
	return after[:1]
}
