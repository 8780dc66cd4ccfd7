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

func TestPollSaysTheLastCauseOnTimeout(t *testing.T) {
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
	n := 0
	if err := Poll(context.Background(), time.Minute, func() (bool, string) { n++; return n == 3, "not yet" }); err != nil || n != 3 {
		t.Fatalf("want done on the third check, got %v after %d", err, n)
	}
}
