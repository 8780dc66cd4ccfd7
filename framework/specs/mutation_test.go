package specs

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// failureMessage returns the first failed assertion's message, unwinds the case there, and still runs
// its cleanups (last first); a passing case gives "".
func TestFailureOfRecordsTheFirstFailureAndRunsCleanups(t *testing.T) {
	var ran []string
	c := Case{Name: "fails", Run: func(ctx context.Context, tt T) {
		tt.Cleanup(func(context.Context) { ran = append(ran, "first") })
		tt.Cleanup(func(context.Context) { ran = append(ran, "second") })
		tt.Gomega().Expect(1).To(Equal(2), "one is not two")
		ran = append(ran, "after the failure")
	}}
	got := failureMessage(context.Background(), c, t.Logf)
	if !strings.Contains(got, "one is not two") {
		t.Errorf("failure %q, want the assertion's message", got)
	}
	if strings.Join(ran, ",") != "second,first" {
		t.Errorf("ran %v, want the case stopped at its failure and both cleanups run, last first", ran)
	}
	pass := Case{Name: "passes", Run: func(ctx context.Context, tt T) { tt.Gomega().Expect(1).To(Equal(1)) }}
	if got := failureMessage(context.Background(), pass, t.Logf); got != "" {
		t.Errorf("a passing case reported %q", got)
	}
}

// In a mutation check only the wait that must catch the mutant is short: the mutant's other waits (an
// install or reconcile it does right, only slowly under load) keep the case's timeouts. A failure
// records the wait it happened in, so CheckMutants can tell a defect caught where it should be from
// a mutant that failed somewhere else.
func TestOnlyTheWaitThatCatchesTheMutantIsShort(t *testing.T) {
	const own = 7 * time.Minute
	short := intervals.Get(intervals.MutantCaught)
	var seen []time.Duration
	c := Case{Name: "leaks", Run: func(ctx context.Context, tt T) {
		r := &Installation{t: tt, g: tt.Gomega(), in: OperandCleanupSpecInput{Timeout: own}}
		for _, w := range []Wait{WaitInstalled, WaitReconciled, WaitLeftovers} {
			end := r.phase(string(w))
			seen = append(seen, r.within(own))
			if w == WaitLeftovers {
				tt.Gomega().Expect("leaked").To(BeEmpty(), "the leftovers check")
			}
			end()
		}
	}}
	rec := failureOf(context.Background(), c, &recordingT{logf: t.Logf, name: c.Name, caughtBy: WaitLeftovers})
	if want := []time.Duration{own, own, short}; !slices.Equal(seen, want) {
		t.Errorf("timeouts %v in waits install, operands-reconciled, leftovers-check; want %v (only the catching wait short)", seen, want)
	}
	if rec.failedIn != WaitLeftovers || !strings.Contains(rec.failure, "the leftovers check") {
		t.Errorf("failed in %q with %q; want the leftovers check's failure in wait %q", rec.failedIn, rec.failure, WaitLeftovers)
	}
	// Outside a mutation check (and for the real operator: no CaughtBy) every wait keeps its timeout.
	real := &Installation{t: &recordingT{logf: t.Logf}, in: OperandCleanupSpecInput{Timeout: own}}
	defer real.phase(string(WaitLeftovers))()
	if got := real.within(own); got != own {
		t.Errorf("the real operator's leftovers wait: %v, want the case's %v", got, own)
	}
}

// A mutant must say which wait catches it; the real operator must not.
func TestMutantInputErrorsNameTheField(t *testing.T) {
	use := func() error { return nil }
	for _, tc := range []struct {
		m    Mutant
		want string
	}{
		{Mutant{Name: "x", Want: []string{"leak"}}, "Use is nil"},
		{Mutant{Name: "x", Use: use, Want: []string{"leak"}}, `CaughtBy is "": name the wait`},
		{Mutant{Name: "x", Use: use, Want: []string{"leak"}, CaughtBy: "reconcile"}, `CaughtBy is "reconcile"`},
		{Mutant{Use: use, CaughtBy: WaitLeftovers}, "Want is empty"},
	} {
		err := tc.m.check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.m, err, tc.want)
		}
	}
	if err := (Mutant{Use: use}).check(); err != nil {
		t.Errorf("the real operator: %v", err)
	}
}

// A mutant the case cannot catch names the weakness the case reported about its input: without a
// Finalized check, a finalizer that skips its work passes, and the check says why.
func TestAMutantThatPassesNamesTheChecksTheInputLacks(t *testing.T) {
	c := Case{Name: "removes the operands", Run: func(ctx context.Context, tt T) {
		r := &Installation{t: tt, g: tt.Gomega(), in: OperandCleanupSpecInput{}}
		func() { // ExpectRemoved without a Finalized check: the operands are gone, nothing else is checked
			defer r.phase(string(WaitRemoved))()
			warnf(r.t, "OperandCleanupSpecInput.Finalized is not set: these specs cannot tell a finalizer that cleans up from one that only removes itself")
		}()
	}}
	m := Mutant{Name: "never-finalizes", Use: func() error { return nil }, Want: []string{"should have removed it"}, CaughtBy: WaitRemoved}
	rec := failureOf(context.Background(), c, &recordingT{logf: t.Logf, name: c.Name, caughtBy: m.CaughtBy})
	fatal, _ := m.verdict(c.Name, m.Name, rec)
	for _, w := range []string{"passed against an operator that never-finalizes", "does not check what it claims to",
		"the case warned that its input cannot catch some defects: OperandCleanupSpecInput.Finalized is not set"} {
		if !strings.Contains(fatal, w) {
			t.Errorf("the verdict lacks %q: %s", w, fatal)
		}
	}
	// Caught by another wait (the leftovers check saw what the finalizer left): that wait is named,
	// and so is the missing check.
	rec = &recordingT{failure: "1 object(s) left behind by the installation", failedIn: WaitLeftovers,
		warnings: []string{"OperandCleanupSpecInput.Finalized is not set"}}
	if fatal, errs := m.verdict(c.Name, m.Name, rec); fatal != "" || len(errs) != 2 ||
		!strings.Contains(errs[0], `failed in wait "leftovers-check", not in wait "operands-gone"`) ||
		!strings.Contains(errs[0], "Finalized is not set") || !strings.Contains(errs[1], "does not name the defect") {
		t.Errorf("verdict %q, %q", fatal, errs)
	}
	// The real operator passes; a real operator that fails is fatal.
	real := Mutant{Use: m.Use}
	if fatal, errs := real.verdict(c.Name, "the-real-operator", &recordingT{}); fatal != "" || len(errs) != 0 {
		t.Errorf("the real operator passing: %q, %q", fatal, errs)
	}
	if fatal, _ := real.verdict(c.Name, "the-real-operator", &recordingT{failure: "boom"}); !strings.Contains(fatal, "failed against the-real-operator: boom") {
		t.Errorf("the real operator failing: %q", fatal)
	}
}

// A defect the case must catch early fails the check when caught late.
func TestAMutantCaughtLaterThanWithinFails(t *testing.T) {
	m := Mutant{Name: "exits-at-start", Use: func() error { return nil }, Want: []string{"crash-looping"}, CaughtBy: WaitInstalled,
		Within: 30 * time.Second}
	late := &recordingT{failure: "CSV op/x will not reach phase Succeeded: its operator is crash-looping", failedIn: WaitInstalled,
		failedAfter: 2 * time.Minute}
	if fatal, errs := m.verdict("c", m.Name, late); fatal != "" || len(errs) != 1 || !strings.Contains(errs[0], "failed 2m0s after its start, later than the 30s") {
		t.Errorf("caught late: %q, %q", fatal, errs)
	}
	late.failedAfter = 5 * time.Second
	if fatal, errs := m.verdict("c", m.Name, late); fatal != "" || len(errs) != 0 {
		t.Errorf("caught in time: %q, %q", fatal, errs)
	}
	if err := (Mutant{Use: m.Use, Within: time.Second}).check(); err == nil || !strings.Contains(err.Error(), "Within is 1s but Want is empty") {
		t.Errorf("the real operator with Within: %v", err)
	}
}
