package specs

import (
	"context"
	"fmt"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// T is the test a step runs in. Installation's steps and the cases (Cases) use only this, so the same
// code runs under Ginkgo (FromGinkgo) and in a *testing.T, such as an e2e-framework assessment
// (FromTesting): no case is written twice.
type T interface {
	// Gomega makes assertions that fail this test.
	Gomega() gomega.Gomega
	// Cleanup registers fn to run when the test ends, the last registered first.
	Cleanup(fn func(ctx context.Context))
	// Step says which step the test is at (Ginkgo's By).
	Step(text string)
	// Logf writes to the test's output.
	Logf(format string, args ...any)
	// Failed reports whether the test has failed so far.
	Failed() bool
	// Name is the test's full name (artifact directories are named after it).
	Name() string
}

// FromGinkgo is the T of the running Ginkgo spec.
func FromGinkgo() T { return ginkgoT{} }

type ginkgoT struct{}

func (ginkgoT) Gomega() gomega.Gomega                { return polling(gomega.Default) }
func (ginkgoT) Cleanup(fn func(ctx context.Context)) { ginkgo.DeferCleanup(fn) }
func (ginkgoT) Step(text string)                     { ginkgo.By(text) }
func (ginkgoT) Logf(format string, args ...any)      { ginkgo.GinkgoWriter.Printf(format+"\n", args...) }
func (ginkgoT) Failed() bool                         { return ginkgo.CurrentSpecReport().Failed() }
func (ginkgoT) Name() string                         { return ginkgo.CurrentSpecReport().FullText() }

// Warnf attaches a warning to the spec's report, shown with the spec whether it passed or failed: a
// weak input (no Reconciled check) passes quietly, and only the report can say so.
func (ginkgoT) Warnf(format string, args ...any) {
	ginkgo.AddReportEntry("WARNING", fmt.Sprintf(format, args...), ginkgo.ReportEntryVisibilityAlways)
}

// warnf shows a weakness of the spec's input: in Ginkgo's report for passing specs too (ginkgoT), in
// the test's log otherwise (`go test -v` shows it).
func warnf(t T, format string, args ...any) {
	if w, ok := t.(interface{ Warnf(string, ...any) }); ok {
		w.Warnf(format, args...)
		return
	}
	t.Logf("WARNING: "+format, args...)
}

// FromTesting makes t a T: assertions fail t (Gomega's NewWithT), cleanups run with t.Cleanup (each
// with a fresh context of the spec-cleanup interval, since the test's own may have ended).
func FromTesting(t testing.TB) T { return testingT{t: t, g: polling(gomega.NewWithT(t))} }

// polling is g whose Eventually and Consistently check every intervals.Poll instead of Gomega's 10 ms
// (a wait's own WithPolling still wins). Failures still go through g, so Ginkgo's
// InterceptGomegaFailures sees them, and the suite's global defaults stay the user's.
func polling(g gomega.Gomega) gomega.Gomega { return pollingGomega{g} }

type pollingGomega struct{ gomega.Gomega }

func (p pollingGomega) Eventually(actualOrCtx any, args ...any) types.AsyncAssertion {
	return p.Gomega.EventuallyWithOffset(1, actualOrCtx, args...).WithPolling(intervals.Poll)
}

func (p pollingGomega) EventuallyWithOffset(offset int, actualOrCtx any, args ...any) types.AsyncAssertion {
	return p.Gomega.EventuallyWithOffset(offset+1, actualOrCtx, args...).WithPolling(intervals.Poll)
}

func (p pollingGomega) Consistently(actualOrCtx any, args ...any) types.AsyncAssertion {
	return p.Gomega.ConsistentlyWithOffset(1, actualOrCtx, args...).WithPolling(intervals.Poll)
}

func (p pollingGomega) ConsistentlyWithOffset(offset int, actualOrCtx any, args ...any) types.AsyncAssertion {
	return p.Gomega.ConsistentlyWithOffset(offset+1, actualOrCtx, args...).WithPolling(intervals.Poll)
}

type testingT struct {
	t testing.TB
	g gomega.Gomega
}

func (t testingT) Gomega() gomega.Gomega { return t.g }
func (t testingT) Cleanup(fn func(ctx context.Context)) {
	t.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SpecCleanup))
		defer cancel()
		fn(ctx)
	})
}
func (t testingT) Step(text string)                { t.t.Helper(); t.t.Logf("STEP: %s", text) }
func (t testingT) Logf(format string, args ...any) { t.t.Helper(); t.t.Logf(format, args...) }
func (t testingT) Failed() bool                    { return t.t.Failed() }
func (t testingT) Name() string                    { return t.t.Name() }
