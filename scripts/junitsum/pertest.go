package main

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

type testRuns struct {
	name         string
	runs, failed int
	firstFailure string
}

// printPerTest prints every test that ran (failing ones first): runs, failures, first failure
// message. It returns false when any test failed or nothing ran.
func printPerTest(w io.Writer, cases []testcase) bool {
	byName := map[string]*testRuns{}
	for _, c := range cases {
		if c.Skipped != nil || (c.setupNode() && c.failed() == nil) {
			continue
		}
		key := strings.TrimSpace(c.Classname + " " + c.Name)
		t := byName[key]
		if t == nil {
			t = &testRuns{name: key}
			byName[key] = t
		}
		t.runs++
		if f := c.failed(); f != nil {
			t.failed++
			if t.firstFailure == "" {
				t.firstFailure = failureLine(f)
			}
		}
	}
	all := make([]*testRuns, 0, len(byName))
	flaky := 0
	for _, t := range byName {
		all = append(all, t)
		if t.failed > 0 {
			flaky++
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].failed != all[j].failed {
			return all[i].failed > all[j].failed
		}
		return all[i].name < all[j].name
	})
	fmt.Fprintf(w, "%5s %6s  %s\n", "RUNS", "FAILED", "TEST (first failure)")
	for _, t := range all {
		fmt.Fprintf(w, "%5d %6d  %s\n", t.runs, t.failed, t.name)
		if t.firstFailure != "" {
			fmt.Fprintf(w, "%13s%s\n", "", t.firstFailure)
		}
	}
	fmt.Fprintf(w, "%d tests, %d failed at least once\n", len(all), flaky)
	return flaky == 0 && len(all) > 0
}

// goTestError matches a `go test` failure line (file_test.go:12: message); goLogLine any file.go:12: line,
// which is also what a logger writing through t.Log prints (provider.go:96: "msg"=...).
var (
	goTestError = regexp.MustCompile(`^\s*\S+_test\.go:\d+: \S`)
	goLogLine   = regexp.MustCompile(`^\s*\S+\.go:\d+: \S`)
)

// failureLine is the one line that says why: Ginkgo's message attribute; for gotestsum (whose message
// is just "Failed") the first message of a _test.go file (t.Error/t.Fatal), else the first file:line
// line, else the first non-empty line of the output.
func failureLine(f *failure) string {
	msg := strings.TrimSpace(f.Message)
	if msg == "" || msg == "Failed" {
		msg = ""
		var logLine, first string
		for _, line := range strings.Split(f.Text, "\n") {
			t := strings.TrimSpace(line)
			switch {
			case goTestError.MatchString(line):
				msg = line
			case logLine == "" && goLogLine.MatchString(line):
				logLine = line
			case first == "" && t != "" && !strings.HasPrefix(t, "=== RUN"):
				first = line
			}
			if msg != "" {
				break
			}
		}
		if msg == "" {
			msg = logLine
		}
		if msg == "" {
			msg = first
		}
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}
