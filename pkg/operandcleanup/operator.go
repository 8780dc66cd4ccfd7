package operandcleanup

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// operatorRecheck is the longest a pending cleanup waits for its next pass, so that a vanished operator
// is reported within seconds even when no operand event comes. The operator's Deployments are read
// live, at most every Options.OperatorCheckInterval (a cleanup pass runs on every operand event, the
// operator rarely disappears), rather than watched: a watch would cache every Deployment of the cluster.
func (o Options) operatorRecheck() time.Duration { return 2 * o.OperatorCheckInterval }

// operatorGone tells why the operator of csv can no longer remove its operands' finalizers, or "" when
// it still can (or it cannot be told): the CSV's namespace is terminating (its Deployment and pods go
// with it), or every Deployment of the install strategy is gone or being deleted. The CSV is read live:
// the cache strips the install strategy.
func (r *Reconciler) operatorGone(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) (string, error) {
	st := r.stateFor(keyOf(csv))
	now := r.opts.Now()
	if !st.operatorCheckedAt.IsZero() && now.Sub(st.operatorCheckedAt) < r.opts.OperatorCheckInterval {
		return st.operatorGone, nil
	}
	why, err := r.checkOperator(ctx, csv)
	if err != nil {
		return "", err
	}
	st.operatorCheckedAt, st.operatorGone = now, why
	return why, nil
}

func (r *Reconciler) checkOperator(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) (string, error) {
	ns := &corev1.Namespace{}
	if err := r.live.Get(ctx, types.NamespacedName{Name: csv.Namespace}, ns); err != nil {
		return "", client404(err, "reading namespace "+csv.Namespace)
	}
	if isDeleting(ns) {
		return fmt.Sprintf("namespace %s, which holds the operator's Deployment, is terminating", csv.Namespace), nil
	}
	full := &v1alpha1.ClusterServiceVersion{}
	if err := r.live.Get(ctx, keyOf(csv), full); err != nil {
		return "", client404(err, "reading CSV "+keyOf(csv).String())
	}
	specs := full.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(specs) == 0 {
		return "", nil
	}
	var gone []string
	for _, d := range specs {
		dep := &appsv1.Deployment{}
		err := r.live.Get(ctx, types.NamespacedName{Namespace: csv.Namespace, Name: d.Name}, dep)
		switch {
		case apierrors.IsNotFound(err):
			gone = append(gone, fmt.Sprintf("Deployment %s/%s is gone", csv.Namespace, d.Name))
		case err != nil:
			return "", fmt.Errorf("reading Deployment %s/%s: %w", csv.Namespace, d.Name, err)
		case isDeleting(dep):
			gone = append(gone, fmt.Sprintf("Deployment %s/%s is being deleted", csv.Namespace, d.Name))
		default:
			return "", nil // one Deployment still runs: the operator may still finish
		}
	}
	return strings.Join(gone, "; "), nil
}

// client404 treats NotFound as "cannot tell" (nil) and wraps other errors.
func client404(err error, what string) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// operatorGoneMessage is the status message when the operator cannot finish.
func operatorGoneMessage(why string, total, listed int) string {
	msg := fmt.Sprintf("the operator cannot finish the cleanup: %s; %d CRs still wait for its finalizers", why, total)
	if listed < total {
		msg += fmt.Sprintf(" (status.cleanup.pendingDeletion lists the first %d)", listed)
	}
	return msg + "; reinstall the operator, remove those finalizers by hand, or set spec.cleanup.enabled=false to stop the cleanup"
}

// warnOperatorGone emits an OperatorGone Warning event once per distinct message. When the CSV's
// namespace is terminating, no event can be created in it: the event then regards that Namespace
// (cluster-scoped, so it is stored in "default") with the CSV as the related object.
func (r *Reconciler) warnOperatorGone(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, st *csvState, msg string) {
	if st.lastGoneWarning == msg {
		return
	}
	st.lastGoneWarning = msg
	log.FromContext(ctx).Info("operator gone during cleanup", "message", msg)
	ns := &corev1.Namespace{}
	if err := r.live.Get(ctx, types.NamespacedName{Name: csv.Namespace}, ns); err == nil && isDeleting(ns) {
		r.recorder.Eventf(ns, csv, corev1.EventTypeWarning, EventReasonOperatorGone, "Cleanup", "CSV %s/%s: %s", csv.Namespace, csv.Name, msg)
		return
	}
	r.recorder.Eventf(csv, nil, corev1.EventTypeWarning, EventReasonOperatorGone, "Cleanup", "%s", msg)
}
