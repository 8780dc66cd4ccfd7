package specs

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// FailureOf returns the first failed assertion's message, unwinds the case there, and still runs
// its cleanups (last first); a passing case gives "".
func TestFailureOfRecordsTheFirstFailureAndRunsCleanups(t *testing.T) {
	var ran []string
	c := Case{Name: "fails", Run: func(ctx context.Context, tt T) {
		tt.Cleanup(func(context.Context) { ran = append(ran, "first") })
		tt.Cleanup(func(context.Context) { ran = append(ran, "second") })
		tt.Gomega().Expect(1).To(Equal(2), "one is not two")
		ran = append(ran, "after the failure")
	}}
	got := FailureOf(context.Background(), c, t.Logf)
	if !strings.Contains(got, "one is not two") {
		t.Errorf("failure %q, want the assertion's message", got)
	}
	if strings.Join(ran, ",") != "second,first" {
		t.Errorf("ran %v, want the case stopped at its failure and both cleanups run, last first", ran)
	}
	pass := Case{Name: "passes", Run: func(ctx context.Context, tt T) { tt.Gomega().Expect(1).To(Equal(1)) }}
	if got := FailureOf(context.Background(), pass, t.Logf); got != "" {
		t.Errorf("a passing case reported %q", got)
	}
}
