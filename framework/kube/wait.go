package kube

import (
	"context"
	"strings"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// CutByDeadline says whether err, returned by a request on ctx, is ctx's deadline (or its end) rather than
// the API server's answer: the context ended, or client-go's rate limiter refused a wait that would end
// after the deadline.
func CutByDeadline(ctx context.Context, err error) bool {
	return err != nil && (ctx.Err() != nil || strings.Contains(err.Error(), intervals.RateLimiterSawTheDeadline))
}
