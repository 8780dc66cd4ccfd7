// Command atonce runs commands side by side (make e2e's suites and example consumers on a shared
// cluster) and stops them all on Ctrl-C. Each run has its own session, so a Ctrl-C reaches atonce
// alone, which passes one SIGTERM to each run; a run's output goes to a file, printed when it ends, or
// with LOG "-" straight to atonce's output (one long run the user watches, e.g. image builds).
//
//	atonce [-grace 10s] NAME LOG CMD [ARG...] [--- NAME LOG CMD [ARG...]]...
//
// It exits 0 when every run passed, 1 when one failed or could not start, 2 on bad arguments, and 130
// when SIGINT or SIGTERM stopped it: each running run's process group gets one SIGTERM (Ginkgo takes a
// second signal as "skip the cleanup"), and SIGKILL after -grace or at a second signal; it exits once
// each of those groups is empty, not only when the run's first process ended.
//
// Not bash jobs: bash can lose a Ctrl-C that comes while it starts the runs, and make e2e then goes on
// to a passing end. Go queues the signal, and a run not started when it comes is not started.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

const separator = "---"

// run is one command: its name in the report, the file its output goes to, and the command line.
type run struct {
	name, log string
	argv      []string
}

func main() {
	grace := flag.Duration("grace", 10*time.Second, "how long the runs have to end after SIGTERM before SIGKILL")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: atonce [-grace 10s] NAME LOG CMD [ARG...] [%s NAME LOG CMD [ARG...]]...\n", separator)
		flag.PrintDefaults()
	}
	flag.Parse()
	// Before any run starts: a signal from now on is queued, never lost.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	runs, err := parse(flag.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "atonce: %v\n", err)
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(runAll(runs, signals, *grace, os.Stdout, os.Stderr))
}

// parse reads NAME LOG CMD [ARG...] groups separated by "---" (a trailing one is allowed).
func parse(args []string) ([]run, error) {
	var runs []run
	for len(args) > 0 {
		n := len(args)
		for i, a := range args {
			if a == separator {
				n = i
				break
			}
		}
		group := args[:n]
		if len(group) < 3 {
			return nil, fmt.Errorf("run %d (%q): want NAME LOG CMD [ARG...], got %d word(s)", len(runs)+1, strings.Join(group, " "), len(group))
		}
		runs = append(runs, run{name: group[0], log: group[1], argv: group[2:]})
		args = args[min(n+1, len(args)):]
	}
	if len(runs) == 0 {
		return nil, errors.New("no run given")
	}
	return runs, nil
}

// logf prints a line in scripts/lib.sh's log format.
func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

type ended struct {
	i   int
	err error
}

// runAll starts the runs one after the other, reports each as it ends (its output to out, the verdict
// to log) and returns the exit status main documents. A signal stops every run started (stop).
func runAll(runs []run, signals <-chan os.Signal, grace time.Duration, out, log io.Writer) int {
	done := make(chan ended, len(runs))
	cmds := make([]*exec.Cmd, len(runs))
	starts := make([]time.Time, len(runs))
	status, running := 0, 0
	for i, r := range runs {
		select {
		case s := <-signals:
			return stop(s, runs, cmds, signals, done, grace, log)
		default:
		}
		if r.log == "-" {
			logf(log, "==> %s", r.name)
		} else {
			logf(log, "==> %s (output: %s, printed when it ends)", r.name, r.log)
		}
		cmd, err := start(r, out, log)
		if err != nil {
			logf(log, "<== %s FAILED (could not start: %v)", r.name, err)
			status = 1
			continue
		}
		cmds[i], starts[i] = cmd, time.Now()
		running++
		go func() { done <- ended{i, cmd.Wait()} }()
	}
	for ; running > 0; running-- {
		select {
		case e := <-done:
			r := runs[e.i]
			cmds[e.i] = nil
			if output, err := os.ReadFile(r.log); r.log != "-" && err == nil {
				_, _ = out.Write(output)
			}
			verdict := "passed"
			if e.err != nil {
				verdict, status = fmt.Sprintf("FAILED (%v)", e.err), 1
			}
			logf(log, "<== %s %s in %ds", r.name, verdict, int(time.Since(starts[e.i]).Seconds()))
		case s := <-signals:
			return stop(s, runs, cmds, signals, done, grace, log)
		}
	}
	return status
}

// start starts r in a session of its own, its output in r.log (or out and log with "-").
func start(r run, out, log io.Writer) (*exec.Cmd, error) {
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdout, cmd.Stderr = out, log
	if r.log != "-" {
		f, err := os.Create(r.log)
		if err != nil {
			return nil, err
		}
		defer f.Close() // the run has its own descriptor
		cmd.Stdout, cmd.Stderr = f, f
	}
	return cmd, cmd.Start()
}

// stop sends one SIGTERM to the process group of every run still running (cmds holds those), waits
// until each group is empty, SIGKILLs the groups left after grace or at the next signal, and returns
// 130. A group can outlive its first process: Ginkgo takes a SIGTERM that comes while it compiles as
// "stop once compiled", so its `go test -c` goes on after the run's bash ended, and a run still
// compiling when make e2e deleted the cluster would create it again.
func stop(s os.Signal, runs []run, cmds []*exec.Cmd, signals <-chan os.Signal, done <-chan ended, grace time.Duration, log io.Writer) int {
	groups := map[int]int{} // run index -> its process group (its first process's pid), until empty
	for i, c := range cmds {
		if c != nil {
			groups[i] = c.Process.Pid
		}
	}
	logf(log, "interrupted (%v): stopping %d run(s) — they remove what they installed; SIGKILL after %v or at the next interrupt", s, len(groups), grace)
	for _, pgid := range groups {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
	}
	reaped := map[int]bool{}
	deadline := time.After(grace)
	var giveUp <-chan time.Time
	kill := func(why string) {
		for i, pgid := range groups {
			logf(log, "%s still runs %s: SIGKILL to its process group", runs[i].name, why)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		// A process killed whose parent died is reaped by init; one never reaped stays in its group.
		deadline, signals, giveUp = nil, nil, time.After(killWait)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for len(groups) > 0 {
		select {
		case e := <-done:
			reaped[e.i] = true
		case <-tick.C:
		case <-deadline:
			kill(fmt.Sprintf("after %v", grace))
		case s := <-signals:
			kill(fmt.Sprintf("at a second interrupt (%v)", s))
		case <-giveUp:
			for i, pgid := range groups {
				logf(log, "%s: process group %d not empty %v after SIGKILL (processes nobody reaps?): left as is", runs[i].name, pgid, killWait)
			}
			return 130
		}
		for i, pgid := range groups {
			if reaped[i] && errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
				delete(groups, i)
				logf(log, "<== %s stopped (output: %s)", runs[i].name, runs[i].log)
			}
		}
	}
	return 130
}

// killWait is how long stop waits for the groups it SIGKILLed to empty.
const killWait = 5 * time.Second
