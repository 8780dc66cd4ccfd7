package kube

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The check that runs as the deadline passes fails because its own call was cut short; the error
// must still carry what was wrong before (the flake hunt caught "read namespace reused: context
// deadline exceeded" instead of "namespace reused is still terminating").
func TestPollKeepsTheCauseSeenBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	err := Poll(ctx, time.Minute, func() (bool, string) {
		if ctx.Err() != nil {
			return false, "read namespace reused: " + ctx.Err().Error()
		}
		<-time.After(200 * time.Millisecond)
		if ctx.Err() != nil { // the call in flight was cut short
			return false, "read namespace reused: " + ctx.Err().Error()
		}
		return false, "namespace reused is still terminating"
	})
	if err == nil || !strings.Contains(err.Error(), "still terminating") {
		t.Fatalf("want the cause seen before the deadline, got %v", err)
	}
	if strings.Contains(err.Error(), "1m0s") {
		t.Fatalf("the caller's context ended after well under a second; the message must not say the Poll timeout: %v", err)
	}
}

// client-go's rate limiter fails a request whose turn would come after the deadline before the deadline
// passes (make test failed with "create namespace reused: client rate limiter Wait returned an error:
// rate: Wait(n=1) would exceed context deadline" instead of the namespace still terminating).
func TestPollKeepsTheCauseSeenBeforeTheRateLimiterSawTheDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	n := 0
	err := Poll(ctx, time.Minute, func() (bool, string) {
		if n++; n <= 2 {
			return false, "namespace reused is still terminating"
		}
		return false, "read namespace reused: client rate limiter Wait returned an error: rate: Wait(n=1) would exceed context deadline"
	})
	if err == nil || !strings.Contains(err.Error(), "still terminating") {
		t.Fatalf("want the cause seen before the rate limiter's refusal, got %v", err)
	}
}

// Explain's reads happen once, after the wait failed, on a context that has not ended, and its word
// follows the check's.
func TestPollExplainsOnceWhenTheWaitFails(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	explained := 0
	err := Poll(ctx, time.Minute, func() (bool, string) { return false, "CSV wants phase Succeeded" },
		Explain(func(ctx context.Context) string {
			explained++
			if ctx.Err() != nil {
				return "explained on an ended context: " + ctx.Err().Error()
			}
			return "operator: deployment not available"
		}))
	if err == nil || !strings.HasSuffix(err.Error(), "CSV wants phase Succeeded; operator: deployment not available") {
		t.Fatalf("want the check's word, then the explanation, got %v", err)
	}
	if explained != 1 {
		t.Fatalf("explained %d times, want once (after the wait failed)", explained)
	}
	n := 0
	if err := Poll(context.Background(), time.Minute, func() (bool, string) { n++; return n == 2, "not yet" },
		Explain(func(context.Context) string { t.Error("explained a wait that succeeded"); return "" })); err != nil {
		t.Fatal(err)
	}
}

func TestPollSaysTheLastCauseOnTimeout(t *testing.T) {
	t.Parallel()
	n := 0
	err := Poll(context.Background(), 600*time.Millisecond, func() (bool, string) {
		n++
		return false, "attempt " + string(rune('0'+n))
	})
	if err == nil || !strings.Contains(err.Error(), "timed out after 600ms") {
		t.Fatalf("want the timeout named, got %v", err)
	}
	if strings.Contains(err.Error(), "attempt 1") && n > 1 {
		t.Fatalf("want the last cause, got %v after %d attempts", err, n)
	}
}

func TestPollReturnsOnceDone(t *testing.T) {
	t.Parallel()
	n := 0
	if err := Poll(context.Background(), time.Minute, func() (bool, string) { n++; return n == 3, "not yet" }); err != nil || n != 3 {
		t.Fatalf("want done on the third check, got %v after %d", err, n)
	}
}
