package kube

import (
	"context"
	"fmt"
	"time"
)

// PollInterval is how often Poll checks.
const PollInterval = 250 * time.Millisecond

// Poll calls check every PollInterval until it returns true, timeout passes or ctx ends. The error
// carries check's last word, so a timeout says what was still wrong.
func Poll(ctx context.Context, timeout time.Duration, check func() (done bool, why string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, why := check()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s: %s", timeout, why)
		case <-time.After(PollInterval):
		}
	}
}
