package operandcleanup

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// maxEventNote keeps event notes under the events.k8s.io/v1 limit (1 KiB).
const maxEventNote = 1000

// checkStall tracks progress (the pending count decreasing) and emits a CleanupStalled Warning event on
// the CSV when there was none for the stall timeout, then again every timeout while it lasts. It returns
// when the next check is due. The clock is persisted in the status (withCleanupStatus): after a restart it
// resumes from there unless the pending count went down meanwhile (progress: the clock restarts now).
func (r *Reconciler) checkStall(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, st *csvState, pass passResult) time.Duration {
	now := r.opts.Now()
	timeout, err := r.opts.stallTimeoutFor(csv)
	if err != nil {
		log.FromContext(ctx).Info("ignoring stall timeout override", "reason", err.Error())
	}
	total := pass.Pending
	switch {
	case st.stallSince.IsZero():
		st.stallCount, st.stallSince = total, now
		if since, count, ok := persistedProgress(csv); ok && since.Before(now) && total >= count {
			st.stallSince = since
		}
	case total < st.stallCount:
		st.stallCount, st.stallSince, st.lastWarn = total, now, time.Time{}
	case total > st.stallCount:
		st.stallCount = total // more CRs is not progress: keep the clock running
	}
	next := st.stallSince.Add(timeout)
	if !st.lastWarn.IsZero() {
		next = st.lastWarn.Add(timeout)
	}
	if now.Before(next) {
		return next.Sub(now)
	}
	st.lastWarn = now
	metricStalls.WithLabelValues(csv.Namespace, csv.Name).Inc()
	r.recorder.Eventf(csv, nil, corev1.EventTypeWarning, EventReasonStalled, "Cleanup", "%s", stallNote(now.Sub(st.stallSince), pass.Pending, pass.First))
	return timeout
}

// stallNote names the first blocking CRs (with their finalizers), as many as fit in an event.
func stallNote(d time.Duration, total int, first []operand) string {
	var b strings.Builder
	fmt.Fprintf(&b, "operand cleanup made no progress for %s; %d CRs still pending deletion:", d.Round(time.Second), total)
	shown := 0
	for _, o := range first {
		item := " " + o.String()
		if len(o.Finalizers) > 0 {
			item += " (finalizers: " + strings.Join(o.Finalizers, ",") + ")"
		}
		if shown > 0 {
			item = ";" + item
		}
		if b.Len()+len(item) > maxEventNote-40 {
			break
		}
		b.WriteString(item)
		shown++
	}
	if shown < total {
		fmt.Fprintf(&b, "; and %d more", total-shown)
	}
	return b.String()
}
