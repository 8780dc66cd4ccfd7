package main

import (
	"strings"
	"testing"
)

// The closing line is what a CI log's tail shows: a failed spec must be named there with its reason.
func TestClosingLineNamesEachFailureAndItsCause(t *testing.T) {
	cases := []testcase{
		{Classname: "Kind Suite", Name: "[It] upgrades along its channel"},
		{Classname: "Kind Suite", Name: "[It] cleans up on uninstall", Failure: &failure{Message: "Widget should be gone after a cleanup-enabled uninstall"}},
		{Classname: "pkg/a", Name: "TestFlaky", Failure: &failure{Message: "Failed", Text: "    flaky_test.go:88: no matches for kind \"Stuck\"\n"}},
		{Classname: "Kind Suite", Name: "[BeforeSuite]"},
		{Classname: "Kind Suite", Name: "[It] skipped", Skipped: &struct{}{}},
	}
	var out strings.Builder
	if printClosingLine(&out, cases, "") {
		t.Error("printClosingLine reported success although specs failed")
	}
	want := "FAILED Kind Suite [It] cleans up on uninstall\n       Widget should be gone after a cleanup-enabled uninstall\n" +
		"FAILED pkg/a TestFlaky\n       flaky_test.go:88: no matches for kind \"Stuck\"\n" +
		"1 passed, 2 failed, 1 skipped\n"
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
