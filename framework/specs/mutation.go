package specs

import (
	"context"
	"fmt"
	"sync"

	"github.com/onsi/gomega"
)

// FailureOf runs c in a test of its own and returns why it failed ("" when it passed), after running
// the case's cleanups. It is for mutation checks: run the cases against an operator with a defect on
// purpose (one that never reconciles, never finalizes, leaks an object) and require a failure naming
// the defect. A suite whose cases pass against such an operator does not check what it claims to.
// logf receives the case's steps and logs.
func FailureOf(ctx context.Context, c Case, logf func(format string, args ...any)) string {
	t := &recordingT{logf: logf, name: c.Name}
	t.g = gomega.NewGomega(func(message string, _ ...int) {
		t.fail(message)
		panic(abort{})
	})
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
	t.cleanup()
	return t.failure
}

// budgeted says whether t's timings belong in the time budget: a mutation check's do not, its phases
// last as long as a timeout on purpose.
func budgeted(t T) bool {
	_, mutant := t.(*recordingT)
	return !mutant
}

// abort unwinds a case at its first failed assertion, as Ginkgo and t.FailNow do.
type abort struct{}

// recordingT is a T that records the first failure instead of failing a real test.
type recordingT struct {
	g       gomega.Gomega
	logf    func(string, ...any)
	name    string
	mu      sync.Mutex
	failure string
	undo    []func(context.Context)
}

func (t *recordingT) fail(message string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failure == "" {
		t.failure = message
	}
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
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
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
