package operandcleanup

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pendingLists groups the pending operands by group/kind for status.cleanup.pendingDeletion, listing at
// most max instances in total (operands are sorted, so the list is stable between passes).
func pendingLists(pending []operand, max int) ([]v1alpha1.ResourceList, int) {
	var out []v1alpha1.ResourceList
	listed := 0
	for _, o := range pending {
		if listed >= max {
			break
		}
		if n := len(out); n == 0 || out[n-1].Group != o.GVK.Group || out[n-1].Kind != o.GVK.Kind {
			out = append(out, v1alpha1.ResourceList{Group: o.GVK.Group, Kind: o.GVK.Kind, Instances: []v1alpha1.ResourceInstance{}})
		}
		last := &out[len(out)-1]
		last.Instances = append(last.Instances, v1alpha1.ResourceInstance{Name: o.Name, Namespace: o.Namespace})
		listed++
	}
	return out, listed
}

// waitingFormat starts the status message while operands remain; persistedProgress parses it back.
const waitingFormat = "waiting for operator to finish cleanup for %d CRs"

// waitingMessage is the status message while operands remain.
func waitingMessage(total, listed int, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, waitingFormat, total)
	if listed < total {
		fmt.Fprintf(&b, "; status.cleanup.pendingDeletion lists the first %d", listed)
	}
	for _, n := range notes {
		b.WriteString("; ")
		b.WriteString(n)
	}
	return b.String()
}

// withCleanupStatus returns a copy of csv with the cleanup phase, reason, message and pending list set,
// and the conditions history updated the way the API's SetPhase does it (a new entry when phase or
// reason change, trimmed to ConditionsLengthLimit). When only the message changes, the latest entry,
// which is this controller's, is updated in place instead of appending one entry per progress step, so
// the history OLM recorded before the deletion is not pushed out.
//
// progress, when set, is the stall clock (the last time the pending count decreased, or the start of
// the cleanup): it is kept in that latest entry's lastTransitionTime, so that a restarted controller
// resumes the clock (persistedProgress) instead of restarting it. nil keeps what is there.
func withCleanupStatus(csv *v1alpha1.ClusterServiceVersion, reason v1alpha1.ConditionReason, msg string, lists []v1alpha1.ResourceList, now metav1.Time, progress *metav1.Time) *v1alpha1.ClusterServiceVersion {
	out := csv.DeepCopy()
	st := &out.Status
	n := len(st.Conditions)
	ours := n > 0 && st.Conditions[n-1].Phase == PhaseCleanup && st.Conditions[n-1].Reason == reason
	progressKept := progress == nil || (ours && st.Conditions[n-1].LastTransitionTime.Equal(progress))
	if st.Phase == PhaseCleanup && st.Reason == reason && st.Message == msg &&
		equality.Semantic.DeepEqual(st.Cleanup.PendingDeletion, lists) && ours && progressKept {
		return out
	}
	if st.Phase != PhaseCleanup {
		st.LastTransitionTime = &now
	}
	st.Phase, st.Reason, st.Message, st.LastUpdateTime = PhaseCleanup, reason, msg, &now
	st.Cleanup.PendingDeletion = lists
	if !ours {
		since := now
		if progress != nil {
			since = *progress
		}
		st.Conditions = append(st.Conditions, v1alpha1.ClusterServiceVersionCondition{
			Phase: PhaseCleanup, Reason: reason, Message: msg, LastUpdateTime: &now, LastTransitionTime: &since,
		})
		out.TrimConditionsIfLimitExceeded()
		return out
	}
	c := &st.Conditions[n-1]
	if c.Message != msg {
		c.Message, c.LastUpdateTime = msg, &now
	}
	if !progressKept {
		since := *progress
		c.LastTransitionTime = &since
	}
	return out
}

// persistedProgress reads back the stall clock a previous run left in the status: the latest condition
// is this controller's waiting condition; its lastTransitionTime is the last progress and its message
// carries the pending count at that time. ok is false when there is nothing to resume (e.g. the cleanup
// was blocked, or never reported).
func persistedProgress(csv *v1alpha1.ClusterServiceVersion) (since time.Time, count int, ok bool) {
	st := &csv.Status
	n := len(st.Conditions)
	if st.Phase != PhaseCleanup || n == 0 {
		return time.Time{}, 0, false
	}
	c := st.Conditions[n-1]
	if c.Phase != PhaseCleanup || c.Reason != ReasonWaitingOnCleanup || c.LastTransitionTime == nil {
		return time.Time{}, 0, false
	}
	if _, err := fmt.Sscanf(c.Message, waitingFormat, &count); err != nil {
		return time.Time{}, 0, false
	}
	return c.LastTransitionTime.Time, count, true
}

// writeStatus patches the CSV status (merge patch of the changed status fields, optimistic lock on
// resourceVersion) when it differs. Only the first write of a cleanup and phase changes are immediate;
// later ones are spaced by StatusUpdateInterval. It returns when the next write is allowed if it skipped.
func (r *Reconciler) writeStatus(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, st *csvState, reason v1alpha1.ConditionReason, msg string, lists []v1alpha1.ResourceList, progress *metav1.Time) (time.Duration, error) {
	now := r.opts.Now()
	updated := withCleanupStatus(csv, reason, msg, lists, metav1.NewTime(now), progress)
	if equality.Semantic.DeepEqual(updated.Status, csv.Status) {
		return 0, nil
	}
	if csv.Status.Phase == PhaseCleanup && csv.Status.Reason == reason && !st.lastStatusWrite.IsZero() {
		if wait := st.lastStatusWrite.Add(r.opts.StatusUpdateInterval).Sub(now); wait > 0 {
			return wait, nil
		}
	}
	patch := client.MergeFromWithOptions(csv, client.MergeFromWithOptimisticLock{})
	if err := r.client.Status().Patch(ctx, updated, patch); err != nil {
		return 0, fmt.Errorf("patching status: %w", err)
	}
	st.lastStatusWrite = now
	return 0, nil
}

// writeFinalStatus records how a cleanup ended (phase PhaseCleanupOver, the outcome's reason, no pending
// list) with the API's SetPhase semantics, so that a CSV still held by another finalizer afterwards shows
// the present, not the last pending count. Written at once (no StatusUpdateInterval spacing).
func (r *Reconciler) writeFinalStatus(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, reason v1alpha1.ConditionReason, msg string) error {
	st := &csv.Status
	if st.Phase == PhaseCleanupOver && st.Reason == reason && st.Message == msg && len(st.Cleanup.PendingDeletion) == 0 {
		return nil
	}
	updated := csv.DeepCopy()
	now := metav1.NewTime(r.opts.Now())
	updated.SetPhase(PhaseCleanupOver, reason, msg, &now)
	updated.Status.Cleanup.PendingDeletion = nil
	if err := r.client.Status().Patch(ctx, updated, client.MergeFromWithOptions(csv, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching final status (%s): %w", reason, err)
	}
	*csv = *updated
	return nil
}
