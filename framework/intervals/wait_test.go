package intervals

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The check that runs as the deadline passes fails because its own call was cut short; the error
// must still carry what was wrong before (the flake hunt caught "read namespace reused: context
// deadline exceeded" instead of "namespace reused is still terminating").
func TestWaitKeepsTheCauseSeenBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	err := waitWithin(ctx, time.Minute, func() (bool, string) {
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
func TestWaitKeepsTheCauseSeenBeforeTheRateLimiterSawTheDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	n := 0
	err := waitWithin(ctx, time.Minute, func() (bool, string) {
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
func TestWaitExplainsOnceWhenTheWaitFails(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	explained := 0
	err := waitWithin(ctx, time.Minute, func() (bool, string) { return false, "CSV wants phase Succeeded" },
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
	if err := waitWithin(context.Background(), time.Minute, func() (bool, string) { n++; return n == 2, "not yet" },
		Explain(func(context.Context) string { t.Error("explained a wait that succeeded"); return "" })); err != nil {
		t.Fatal(err)
	}
}

func TestWaitSaysTheLastCauseOnTimeout(t *testing.T) {
	t.Parallel()
	n := 0
	err := waitWithin(context.Background(), 600*time.Millisecond, func() (bool, string) {
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

func TestWaitReturnsOnceDone(t *testing.T) {
	t.Parallel()
	n := 0
	if err := waitWithin(context.Background(), time.Minute, func() (bool, string) { n++; return n == 3, "not yet" }); err != nil || n != 3 {
		t.Fatalf("want done on the third check, got %v after %d", err, n)
	}
}

// waitWithin is Wait with a timeout of the test's own.
func waitWithin(ctx context.Context, timeout time.Duration, check func() (bool, string), opts ...WaitOption) error {
	return Wait(ctx, Gone, check, append(opts, Within(timeout))...)
}

// A wait that used its table timeout names the interval and the knob that stretches it; one cut short
// by the caller's context does not, since raising the interval would not help.
func TestWaitNamesTheIntervalItRanOutOf(t *testing.T) {
	t.Setenv("CLEANUP_E2E_WAIT_SCALE", "0.001") // quiet's 2 s become 2 ms
	err := Wait(context.Background(), Quiet, func() (bool, string) { return false, "still there" }, Every(time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "(intervals quiet × CLEANUP_E2E_WAIT_SCALE=0.001): still there") {
		t.Fatalf("want the interval and the scale named, got %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err = Wait(ctx, Gone, func() (bool, string) { return false, "still there" }, Every(time.Millisecond))
	if err == nil || strings.Contains(err.Error(), "intervals gone") {
		t.Fatalf("a wait its caller cut short must not send the reader to the interval, got %v", err)
	}
}
