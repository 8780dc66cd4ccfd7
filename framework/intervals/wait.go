package intervals

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

// WaitEvery is how often Wait checks unless told otherwise (Every). A check is usually a request to
// the API server, and a suite runs many waits at once: a quarter second keeps their load small against
// what the suite tests, and is short against every timeout of the table.
const WaitEvery = 250 * time.Millisecond

// Wait calls check every WaitEvery until it returns true, the named wait's timeout (Get(n), or Within's)
// passes or ctx ends. It is the framework's one polling loop: its timeout comes from the table, so
// $CLEANUP_E2E_WAIT_SCALE stretches it, and its error says what was still wrong.
//
// The error carries check's last word. A check that ran while the deadline passed usually failed only
// because its own API call was cut short ("context deadline exceeded", or client-go's rate limiter
// refusing a wait that would end after it); its word would hide the real cause, so the word from the
// check before it is kept.
//
// To stop early on a verdict of its own (an operator crash-looping, a watch that failed), check records
// it in a variable of the caller and returns true; the caller then returns that verdict.
func Wait(ctx context.Context, n Name, check func() (done bool, why string), opts ...WaitOption) error {
	o := waitOptions{every: WaitEvery}
	for _, opt := range opts {
		opt(&o)
	}
	timeout := o.within
	if timeout <= 0 {
		timeout = Get(n)
	}
	knob := "" // the knob that stretches the timeout, when it is the table's (passed on by the caller or not)
	if d, ok := defaults[n]; ok && timeout == Scaled(d) {
		knob = fmt.Sprintf(" (intervals %s × %s=%g)", n, envvar.WaitScale.Name, Scale())
	}
	start := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		ok, why := check()
		if ok {
			return nil
		}
		if last == "" || waitCtx.Err() == nil && !strings.Contains(why, RateLimiterSawTheDeadline) {
			last = why
		}
		select {
		case <-waitCtx.Done():
			if word := o.explained(ctx); word != "" {
				last += "; " + word
			}
			took := waited(start, timeout)
			if took < timeout {
				knob = "" // the caller's context ended first: the table's timeout is not what to raise
			}
			return fmt.Errorf("timed out after %s%s: %s", took, knob, last)
		case <-time.After(o.every): // after the check, not on a clock: a slow check does not make them denser
		}
	}
}

// RateLimiterSawTheDeadline is how client-go's rate limiter (golang.org/x/time/rate, Limiter.Wait) fails
// a request whose turn would come after the context's deadline: before the deadline, so Wait cannot tell
// it from the context, but a word about the deadline all the same, not about what the check looks at.
const RateLimiterSawTheDeadline = "would exceed context deadline"

// WaitOption configures Wait.
type WaitOption func(*waitOptions)

type waitOptions struct {
	within  time.Duration
	every   time.Duration
	explain func(context.Context) string
}

// Within replaces the named wait's timeout by d when d > 0: a caller's or an input's own timeout
// (already scaled where it came from the table), or an observation window. d ≤ 0 keeps the table's.
func Within(d time.Duration) WaitOption {
	return func(o *waitOptions) { o.within = d }
}

// Every replaces WaitEvery: shorter for a check that reads memory or a local file only (a recorder's
// state, a process table), longer for one that costs several requests.
func Every(d time.Duration) WaitOption {
	return func(o *waitOptions) {
		if d > 0 {
			o.every = d
		}
	}
}

// Explain adds explain's word (unless empty) to the timeout's error: for what takes more reads than
// the check needs (an operator's Deployment and pods when a CSV is not Succeeded), read once when the
// wait has failed instead of on every poll — on a cluster with nodes, those descriptions on every
// poll were a large share of a suite's requests.
func Explain(explain func(context.Context) string) WaitOption {
	return func(o *waitOptions) { o.explain = explain }
}

// explained runs explain on a context of its own (the wait's has ended, and the caller's may have),
// bounded by the request interval: its reads run after the wait's own deadline.
func (o waitOptions) explained(ctx context.Context) string {
	if o.explain == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Get(Request))
	defer cancel()
	return o.explain(ctx)
}

// waited is how long Wait really waited: the caller's context can end before timeout does, and a
// message saying "after 2m0s" for a 2 s wait sends the reader after the wrong knob.
func waited(start time.Time, timeout time.Duration) time.Duration {
	if d := time.Since(start); d < timeout {
		return d.Round(100 * time.Millisecond)
	}
	return timeout
}
