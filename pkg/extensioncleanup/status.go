package extensioncleanup

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/cleanuppass"
)

// released reasons: the condition is False once this controller holds nothing any more.
var released = map[string]bool{ReasonCompleted: true, ReasonAborted: true, ReasonOrphaned: true}

// setCondition writes ConditionType on the live ClusterExtension's status (Update guarded by
// resourceVersion: operator-controller writes the same status, and keeps every condition it does not
// own), only when reason or message changed.
func (r *Reconciler) setCondition(ctx context.Context, ce *unstructured.Unstructured, reason, msg string) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(ClusterExtensionGVK)
	if err := r.live.Get(ctx, client.ObjectKeyFromObject(ce), live); err != nil {
		return client.IgnoreNotFound(err)
	}
	conds, err := Conditions(live)
	if err != nil {
		return err
	}
	status := metav1.ConditionTrue
	if released[reason] {
		status = metav1.ConditionFalse
	}
	const maxMessage = 32 * 1024 // metav1.Condition's limit
	if len(msg) > maxMessage {
		msg = msg[:maxMessage-3] + "..."
	}
	if c := meta.FindStatusCondition(conds, ConditionType); c != nil && c.Status == status && c.Reason == reason && c.Message == msg {
		return nil
	}
	meta.SetStatusCondition(&conds, metav1.Condition{Type: ConditionType, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: live.GetGeneration()})
	raw := make([]any, 0, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err != nil {
			return err
		}
		raw = append(raw, m)
	}
	if err := unstructured.SetNestedSlice(live.Object, raw, "status", "conditions"); err != nil {
		return err
	}
	return r.client.Status().Update(ctx, live)
}

// Conditions are a ClusterExtension's status conditions.
func Conditions(u *unstructured.Unstructured) ([]metav1.Condition, error) {
	raw, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Condition, 0, len(raw))
	for _, x := range raw {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
			return nil, fmt.Errorf("reading the conditions of ClusterExtension %s: %w", u.GetName(), err)
		}
		out = append(out, c)
	}
	return out, nil
}

// warnOnce emits a Warning event when reason or message change, and again every StallTimeout.
func (r *Reconciler) warnOnce(ctx context.Context, ce *unstructured.Unstructured, reason, msg string) {
	st := r.stateFor(ce.GetName())
	key := reason + "\x00" + msg
	if st.lastWarnKey == key && time.Since(st.lastWarn) < r.opts.StallTimeout {
		return
	}
	st.lastWarnKey, st.lastWarn = key, time.Now()
	r.recorder.Eventf(ce, nil, corev1.EventTypeWarning, reason, "Uninstall", "%s", msg)
}

// pendingMessage: the pending count, the first pending CRs (bounded) with their finalizers, the notes.
func pendingMessage(res cleanuppass.Result, p *plan) string {
	var first []string
	for _, o := range res.First {
		s := o.String()
		if o.Deleting {
			s += " (deleting, finalizers: " + strings.Join(o.Finalizers, ",") + ")"
		}
		first = append(first, s)
	}
	msg := fmt.Sprintf("waiting for the operator to finalize %d CRs (%s, in %s); first: %s", res.Pending, kindsOf(p), p.scope(), strings.Join(first, ", "))
	if len(p.notes) > 0 {
		msg += "; " + strings.Join(p.notes, "; ")
	}
	return msg
}

func kindsOf(p *plan) string {
	var ks []string
	for _, t := range p.types {
		if _, shared := p.shared[t.GVK.GroupKind()]; !shared { // named in the notes: never deleted
			ks = append(ks, t.GVK.GroupKind().String())
		}
	}
	if len(ks) == 0 {
		return "no kind"
	}
	return strings.Join(ks, ", ")
}

// capped joins up to max names and says how many more there are.
func capped(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}
