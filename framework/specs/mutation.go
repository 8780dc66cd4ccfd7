package specs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// failureMessage runs c in a test of its own and returns why it failed ("" when it passed), after running
// the case's cleanups. It is for mutation checks: run the cases against an operator with a defect on
// purpose (one that never reconciles, never finalizes, leaks an object, keeps its finalizer) and
// require a failure naming the defect. A suite whose cases pass against such an operator does not
// check what it claims to. logf receives the case's steps and logs. CheckMutants also checks which
// wait caught the defect.
func failureMessage(ctx context.Context, c Case, logf func(format string, args ...any)) string {
	return failureOf(ctx, c, &recordingT{logf: logf, name: c.Name}).failure
}

func failureOf(ctx context.Context, c Case, t *recordingT) *recordingT {
	t.g = polling(gomega.NewGomega(func(message string, _ ...int) {
		t.fail(message)
		panic(abort{})
	}))
	t.started = time.Now()
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(abort); !ok {
					t.fail(fmt.Sprintf("panic: %v", r))
				}
			}
		}()
		c.Run(ctx, t)
	}()
	t.wait = ""
	t.cleanup()
	return t
}

// budgeted says whether t's timings belong in the time budget: a mutation check's do not, its phases
// last as long as a timeout on purpose.
func budgeted(t T) bool {
	_, mutant := t.(*recordingT)
	return !mutant
}

// abort unwinds a case at its first failed assertion, as Ginkgo and t.FailNow do.
type abort struct{}

// recordingT is a T that records the first failure instead of failing a real test, and the wait it
// failed in.
type recordingT struct {
	g    gomega.Gomega
	logf func(string, ...any)
	name string
	// caughtBy is the wait that must catch the mutant: only its timeout is intervals.MutantCaught.
	caughtBy Wait
	mu       sync.Mutex
	wait     Wait // the wait the case is in ("" between them)
	failure  string
	failedIn Wait
	// started is when the case began; failedAfter how long after it the first failure came.
	started     time.Time
	failedAfter time.Duration
	undo        []func(context.Context)
	// warnings are the weaknesses of the case's input it reported (warnf): why a mutant may pass.
	warnings []string
}

// Warnf records a weakness of the case's input (a check left unset) and logs it: CheckMutants names
// it when a mutant passes or is caught by another wait than the one meant to catch it.
func (t *recordingT) Warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.mu.Lock()
	t.warnings = append(t.warnings, msg)
	t.mu.Unlock()
	t.logf("WARNING: %s", msg)
}

func (t *recordingT) fail(message string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failure == "" {
		t.failure, t.failedIn, t.failedAfter = message, t.wait, time.Since(t.started)
	}
}

// enter records that the case is in wait w until the returned func is called.
func (t *recordingT) enter(w Wait) func() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.wait = w
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.wait == w {
			t.wait = ""
		}
	}
}

// timeout is d, or intervals.MutantCaught in the wait that must catch the mutant: a mutant's failing
// wait is short, the waits it must pass (as the real operator does) keep the case's timeouts.
func (t *recordingT) timeout(d time.Duration) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.caughtBy != "" && t.wait == t.caughtBy {
		return intervals.Get(intervals.MutantCaught)
	}
	return d
}

func (t *recordingT) Gomega() gomega.Gomega                { return t.g }
func (t *recordingT) Cleanup(fn func(ctx context.Context)) { t.undo = append(t.undo, fn) }
func (t *recordingT) Step(text string)                     { t.logf("STEP: %s", text) }
func (t *recordingT) Logf(format string, args ...any)      { t.logf(format, args...) }
func (t *recordingT) Name() string                         { return t.name }
func (t *recordingT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failure != ""
}

// cleanup runs the registered cleanups, the last first, each with its own context (the case's may
// have ended); a cleanup that fails an assertion is recorded like the case's own failures.
func (t *recordingT) cleanup() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		func() {
			ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SpecCleanup))
			defer cancel()
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(abort); !ok {
						t.fail(fmt.Sprintf("panic in cleanup: %v", r))
					}
				}
			}()
			t.undo[i](ctx)
		}()
	}
}

// Mutant is an operator with one defect on purpose, for CheckMutants.
type Mutant struct {
	// Name says what the defect is, e.g. "never-reconciles"; "" or "the-real-operator" for none.
	Name string
	// Use makes the cluster run this variant from now on (e.g. registers the CSV's image with the
	// variant's binary or entrypoint).
	Use func() error
	// Want are texts the case's failure must contain, so that it names the defect. None: the case must
	// pass (the real operator).
	Want []string
	// CaughtBy is the wait of the case that must catch the defect (required with Want), e.g.
	// WaitReconciled for an operator that never reconciles. That wait times out after
	// intervals.MutantCaught; the others keep the case's timeouts, so a mutant slow to do what it does
	// right (install, reconcile) is not mistaken for caught. A failure in another wait fails the check.
	CaughtBy Wait
	// Within bounds how long after the case's start the failure may come (0: no bound beyond the
	// waits' own timeouts): for a defect the case must catch early, such as an operator that exits at
	// start, which the install's wait stops on at its third exit instead of waiting out its timeout.
	Within time.Duration
}

// Wait names a wait of a case, by the phase of the time budget it runs in.
type Wait string

// The waits of a case that a defect can fail.
const (
	WaitInstalled   Wait = "install"             // the CSV installed, with or without the cleanup finalizer
	WaitReconciled  Wait = "operands-reconciled" // the operator reconciled the samples (Reconciled)
	WaitRemoved     Wait = "operands-gone"       // the samples gone and finalized (Finalized)
	WaitUninstalled Wait = "csv-gone"            // the CSV, the operator's Deployments and pods gone
	WaitLeftovers   Wait = "leftovers-check"     // nothing left behind (ExpectNoLeftovers)
)

var waits = []Wait{WaitInstalled, WaitReconciled, WaitRemoved, WaitUninstalled, WaitLeftovers}

// CheckMutants runs c against each mutant in turn (a subtest each): it must fail naming the defect,
// in the wait that must catch it, against every mutant with Want and pass against one without.
func CheckMutants(ctx context.Context, t *testing.T, c Case, mutants ...Mutant) {
	for _, m := range mutants {
		name := m.Name
		if name == "" {
			name = "the-real-operator"
		}
		t.Run(name, func(t *testing.T) {
			if err := m.check(); err != nil {
				t.Fatalf("Mutant %s: %v", name, err)
			}
			if err := m.Use(); err != nil {
				t.Fatalf("switch to %s: %v", name, err)
			}
			run := c // named after the mutant: a failure on purpose leaves artifacts that say so
			run.Name = "mutant " + name + ": " + c.Name
			rec := failureOf(ctx, run, &recordingT{logf: t.Logf, name: run.Name, caughtBy: m.CaughtBy})
			fatal, errs := m.verdict(c.Name, name, rec)
			if fatal != "" {
				t.Fatal(fatal)
			}
			if rec.failure != "" {
				t.Logf("failed as it should, in wait %q after %s, saying: %s", rec.failedIn, rec.failedAfter.Round(100*time.Millisecond), rec.failure)
			}
			for _, e := range errs {
				t.Error(e)
			}
		})
	}
}

// verdict judges one run of the case against m: a fatal mismatch (a mutant that passed, the real
// operator failing), else the ways its failure falls short (caught by another wait, not naming the
// defect). Each names what the case warned about its own input, which explains a mutant it cannot
// catch (no Finalized check: a finalizer that skips its work passes).
func (m Mutant) verdict(caseName, name string, rec *recordingT) (fatal string, errs []string) {
	failure := rec.failure
	weak := ""
	if len(rec.warnings) > 0 {
		weak = "; the case warned that its input cannot catch some defects: " + strings.Join(rec.warnings, "; ")
	}
	switch {
	case len(m.Want) == 0 && failure != "":
		return fmt.Sprintf("the case %q failed against %s: %s", caseName, name, failure), nil
	case len(m.Want) > 0 && failure == "":
		return fmt.Sprintf("the case %q passed against an operator that %s: it does not check what it claims to%s", caseName, name, weak), nil
	}
	if len(m.Want) > 0 && rec.failedIn != m.CaughtBy {
		errs = append(errs, fmt.Sprintf("the case failed in %s, not in wait %q that should catch the defect (only that one times out after %s; "+
			"the others keep the case's timeouts): %s%s", describeWait(rec.failedIn), m.CaughtBy, intervals.Get(intervals.MutantCaught), failure, weak))
	}
	if m.Within > 0 && rec.failedAfter > m.Within {
		errs = append(errs, fmt.Sprintf("the case failed %s after its start, later than the %s it must fail within: %s",
			rec.failedAfter.Round(100*time.Millisecond), m.Within, failure))
	}
	for _, w := range m.Want {
		if !strings.Contains(failure, w) {
			errs = append(errs, fmt.Sprintf("the failure does not name the defect (want %q):\n%s", w, failure))
		}
	}
	return "", errs
}

func (m Mutant) check() error {
	switch {
	case m.Use == nil:
		return fmt.Errorf("Use is nil: set it to make the cluster run this variant")
	case len(m.Want) == 0 && m.CaughtBy != "":
		return fmt.Errorf("CaughtBy is %q but Want is empty: a mutant without Want is the real operator, which must pass", m.CaughtBy)
	case len(m.Want) == 0 && m.Within != 0:
		return fmt.Errorf("Within is %s but Want is empty: a mutant without Want is the real operator, which must pass", m.Within)
	case len(m.Want) > 0 && !slices.Contains(waits, m.CaughtBy):
		return fmt.Errorf("CaughtBy is %q: name the wait that must catch the defect, one of %v", m.CaughtBy, waits)
	}
	return nil
}

func describeWait(w Wait) string {
	if w == "" {
		return "no wait (a step between waits, or a cleanup)"
	}
	return fmt.Sprintf("wait %q", w)
}

// EnabledCase is the cleanup-enabled case of in for mode (the one mutation checks run: it reconciles,
// finalizes and checks for leftovers).
func EnabledCase(in OperandCleanupSpecInput, mode operatorsv1alpha1.InstallModeType) (Case, error) {
	cases, err := Cases(in)
	if err != nil {
		return Case{}, err
	}
	for _, c := range cases {
		if c.Mode == mode && strings.HasPrefix(c.Name, enabledCaseName) {
			return c, nil
		}
	}
	return Case{}, fmt.Errorf("no cleanup-enabled case in %s mode among the %d cases of %s (OperandCleanupSpecInput.InstallModes?)",
		mode, len(cases), in.Name)
}
