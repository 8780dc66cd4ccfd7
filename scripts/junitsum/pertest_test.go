package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two runs: a go test that failed once (gotestsum's message is just "Failed", the reason is in the
// output, after a logger's line) and a Ginkgo spec that failed once (the reason is the message), next to a steady test.
func TestPerTestCountsRunsAndKeepsTheFirstFailure(t *testing.T) {
	dir := t.TempDir()
	run1 := `<testsuites><testsuite>
<testcase classname="pkg/a" name="TestSteady"></testcase>
<testcase classname="pkg/a" name="TestFlaky"><failure message="Failed">=== RUN   TestFlaky
    provider.go:96: "level"=0 "msg"="starting etcd" (a logger writing through t.Log comes first)
    flaky_test.go:88: no matches for kind "Stuck" in version "example.test/v1"
--- FAIL: TestFlaky</failure></testcase>
<testcase classname="Cleanup" name="[BeforeSuite]"></testcase>
<testcase classname="Cleanup" name="[It] removes widgets"></testcase>
</testsuite></testsuites>`
	run2 := `<testsuites><testsuite>
<testcase classname="pkg/a" name="TestSteady"></testcase>
<testcase classname="pkg/a" name="TestFlaky"></testcase>
<testcase classname="Cleanup" name="[It] removes widgets"><failure message="widget w still there" type="failed">long trace</failure></testcase>
<testcase classname="Cleanup" name="[It] skipped one"><skipped></skipped></testcase>
</testsuite></testsuites>`
	var paths []string
	for i, body := range []string{run1, run2} {
		p := filepath.Join(dir, "run"+string(rune('1'+i))+".xml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cases, err := readCases(paths)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if printPerTest(&out, cases) {
		t.Error("printPerTest reported success although tests failed")
	}
	got := out.String()
	for _, want := range []string{
		"    2      1  Cleanup [It] removes widgets\n             widget w still there\n",
		"    2      1  pkg/a TestFlaky\n             flaky_test.go:88: no matches for kind \"Stuck\" in version \"example.test/v1\"\n",
		"    2      0  pkg/a TestSteady\n",
		"3 tests, 2 failed at least once\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "BeforeSuite") || strings.Contains(got, "skipped one") {
		t.Errorf("setup nodes that passed and skipped specs are not tests that ran:\n%s", got)
	}
}
