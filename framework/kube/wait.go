package kube

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// PollInterval is how often Poll checks.
const PollInterval = 250 * time.Millisecond

// Poll calls check every PollInterval until it returns true, timeout passes or ctx ends. The error
// carries check's last word, so a timeout says what was still wrong. A check that ran while the
// deadline passed usually failed only because its own API call was cut short ("context deadline
// exceeded", or client-go's rate limiter refusing a wait that would end after it); its word would hide
// the real cause, so the word from the check before it is kept.
func Poll(ctx context.Context, timeout time.Duration, check func() (done bool, why string), opts ...PollOption) error {
	var o pollOptions
	for _, opt := range opts {
		opt(&o)
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
		if last == "" || waitCtx.Err() == nil && !strings.Contains(why, rateLimiterSawTheDeadline) {
			last = why
		}
		select {
		case <-waitCtx.Done():
			if word := o.explained(ctx); word != "" {
				last += "; " + word
			}
			return fmt.Errorf("timed out after %s: %s", waited(start, timeout), last)
		case <-time.After(PollInterval):
		}
	}
}

// rateLimiterSawTheDeadline is how client-go's rate limiter (golang.org/x/time/rate, Limiter.Wait) fails
// a request whose turn would come after the context's deadline: before the deadline, so Poll cannot tell
// it from the context, but a word about the deadline all the same, not about what the check looks at.
const rateLimiterSawTheDeadline = "would exceed context deadline"

// CutByDeadline says whether err, returned by a request on ctx, is ctx's deadline (or its end) rather than
// the API server's answer: the context ended, or client-go's rate limiter refused a wait that would end
// after the deadline.
func CutByDeadline(ctx context.Context, err error) bool {
	return err != nil && (ctx.Err() != nil || strings.Contains(err.Error(), rateLimiterSawTheDeadline))
}

// PollOption configures Poll.
type PollOption func(*pollOptions)

type pollOptions struct {
	explain func(context.Context) string
}

// Explain adds explain's word (unless empty) to the timeout's error: for what takes more reads than
// the check needs (an operator's Deployment and pods when a CSV is not Succeeded), read once when the
// wait has failed instead of on every poll: on kind, Deployment gets and pod lists were ≈ 2,300 of
// 34,000 requests in two minutes of make e2e, these descriptions among them.
func Explain(explain func(context.Context) string) PollOption {
	return func(o *pollOptions) { o.explain = explain }
}

// explainTimeout bounds the explanation's reads: they run after the wait's own deadline.
const explainTimeout = 5 * time.Second

// explained runs explain on a context of its own (the wait's has ended, and the caller's may have).
func (o pollOptions) explained(ctx context.Context) string {
	if o.explain == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), explainTimeout)
	defer cancel()
	return o.explain(ctx)
}

// waited is how long Poll really waited: the caller's context can end before timeout does, and a
// message saying "after 2m0s" for a 2 s wait sends the reader after the wrong knob.
func waited(start time.Time, timeout time.Duration) time.Duration {
	if d := time.Since(start); d < timeout {
		return d.Round(100 * time.Millisecond)
	}
	return timeout
}
