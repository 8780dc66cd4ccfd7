package applier

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// transient reports errors worth retrying within a pass.
func transient(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsConflict(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err)
}

// retry calls fn until it succeeds, returns an error retryable() rejects, or Options.TaskRetryTimeout
// passes; NoMatch errors reset a resettable RESTMapper first.
func (a *Applier) retry(ctx context.Context, retryable func(error) bool, fn func() error) error {
	deadline := a.opts.Now().Add(a.opts.TaskRetryTimeout)
	delay := 100 * time.Millisecond
	for {
		err := fn()
		if err == nil || !retryable(err) || !a.opts.Now().Before(deadline) {
			return err
		}
		if meta.IsNoMatchError(err) {
			a.resetMapper()
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		if delay *= 2; delay > 2*time.Second {
			delay = 2 * time.Second
		}
	}
}

func (a *Applier) resetMapper() {
	if r, ok := a.mapper.(meta.ResettableRESTMapper); ok {
		r.Reset()
	}
	if cm := a.c.RESTMapper(); cm != a.mapper {
		if r, ok := cm.(meta.ResettableRESTMapper); ok {
			r.Reset()
		}
	}
}

func isNoMatch(err error) bool { return meta.IsNoMatchError(err) }
