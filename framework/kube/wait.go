package kube

import (
	"context"
	"fmt"
	"time"
)

// PollInterval is how often Poll checks.
const PollInterval = 250 * time.Millisecond

// Poll calls check every PollInterval until it returns true, timeout passes or ctx ends. The error
// carries check's last word, so a timeout says what was still wrong. A check that ran while the
// deadline passed usually failed only because its own API call was cut short ("context deadline
// exceeded"); its word would hide the real cause, so the word from the check before it is kept.
func Poll(ctx context.Context, timeout time.Duration, check func() (done bool, why string)) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		ok, why := check()
		if ok {
			return nil
		}
		if ctx.Err() == nil || last == "" {
			last = why
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s: %s", waited(start, timeout), last)
		case <-time.After(PollInterval):
		}
	}
}

// waited is how long Poll really waited: the caller's context can end before timeout does, and a
// message saying "after 2m0s" for a 2 s wait sends the reader after the wrong knob.
func waited(start time.Time, timeout time.Duration) time.Duration {
	if d := time.Since(start); d < timeout {
		return d.Round(100 * time.Millisecond)
	}
	return timeout
}
