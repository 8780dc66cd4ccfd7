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

// operatorTrouble says why the operator of a CSV cannot remove its operands' finalizers now: reason
// ReasonOperatorGone when it never will by itself, ReasonOperatorNotRunning when it would once a replica
// runs again. The zero value: it still can (or it cannot be told).
type operatorTrouble struct {
	reason v1alpha1.ConditionReason
	why    string
}

// operatorGone tells why the operator of csv cannot remove its operands' finalizers, if it cannot: the
// CSV's namespace is terminating (its Deployment and pods go with it), every Deployment of the install
// strategy is gone or being deleted, or none has an available replica (scaled to 0, or crashing). The
// CSV is read live: the cache strips the install strategy.
func (r *Reconciler) operatorGone(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) (operatorTrouble, error) {
	st := r.stateFor(keyOf(csv))
	now := r.opts.Now()
	if !st.operatorCheckedAt.IsZero() && now.Sub(st.operatorCheckedAt) < r.opts.OperatorCheckInterval {
		return st.operatorGone, nil
	}
	trouble, err := r.checkOperator(ctx, csv)
	if err != nil {
		return operatorTrouble{}, err
	}
	st.operatorCheckedAt, st.operatorGone = now, trouble
	return trouble, nil
}

func (r *Reconciler) checkOperator(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) (operatorTrouble, error) {
	ns := &corev1.Namespace{}
	if err := r.live.Get(ctx, types.NamespacedName{Name: csv.Namespace}, ns); err != nil {
		return operatorTrouble{}, client404(err, "reading namespace "+csv.Namespace)
	}
	if isDeleting(ns) {
		return operatorTrouble{ReasonOperatorGone, fmt.Sprintf("namespace %s, which holds the operator's Deployment, is terminating", csv.Namespace)}, nil
	}
	deps, err := r.strategyDeployments(ctx, csv)
	if err != nil || len(deps) == 0 {
		return operatorTrouble{}, err
	}
	var gone, idle []string
	for _, d := range deps {
		switch {
		case d.dep == nil:
			gone = append(gone, fmt.Sprintf("Deployment %s/%s is gone", csv.Namespace, d.name))
		case isDeleting(d.dep):
			gone = append(gone, fmt.Sprintf("Deployment %s/%s is being deleted", csv.Namespace, d.name))
		default:
			why := notRunning(d.dep)
			if why == "" {
				return operatorTrouble{}, nil // one Deployment still runs: the operator may still finish
			}
			idle = append(idle, why)
		}
	}
	if len(idle) > 0 {
		return operatorTrouble{ReasonOperatorNotRunning, strings.Join(append(idle, gone...), "; ")}, nil
	}
	return operatorTrouble{ReasonOperatorGone, strings.Join(gone, "; ")}, nil
}

// notRunning says why a Deployment has no available replica, or "" when it has one or its status cannot
// tell (no controller has observed its current generation: envtest without a deployment controller).
func notRunning(dep *appsv1.Deployment) string {
	name := dep.Namespace + "/" + dep.Name
	if dep.Spec.Replicas != nil && *dep.Spec.Replicas == 0 {
		return fmt.Sprintf("Deployment %s is scaled to 0 (spec.replicas: 0)", name)
	}
	if dep.Generation == 0 || dep.Status.ObservedGeneration < dep.Generation || dep.Status.AvailableReplicas > 0 {
		return ""
	}
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	return fmt.Sprintf("Deployment %s has no available replica (0 of %d)", name, want)
}

// client404 treats NotFound as "cannot tell" (nil) and wraps other errors.
func client404(err error, what string) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// operatorTroubleMessage is the status message when the operator cannot finish now.
func operatorTroubleMessage(t operatorTrouble, total, listed int) string {
	what, fix := "the operator cannot finish the cleanup", "reinstall the operator, remove those finalizers by hand"
	if t.reason == ReasonOperatorNotRunning {
		what, fix = "the operator has no running replica", "scale its Deployment back up (or fix why its pods do not become available)"
	}
	msg := fmt.Sprintf("%s: %s; %d CRs still wait for its finalizers", what, t.why, total)
	if listed < total {
		msg += fmt.Sprintf(" (status.cleanup.pendingDeletion lists the first %d)", listed)
	}
	return msg + "; " + fix + ", or set spec.cleanup.enabled=false to stop the cleanup"
}

// warnOperatorGone emits a Warning event (OperatorGone or OperatorNotRunning) once per distinct message. When the CSV's
// namespace is terminating, no event can be created in it: the event then regards that Namespace
// (cluster-scoped, so it is stored in "default") with the CSV as the related object.
func (r *Reconciler) warnOperatorGone(ctx context.Context, csv *v1alpha1.ClusterServiceVersion, st *csvState, reason v1alpha1.ConditionReason, msg string) {
	if st.lastGoneWarning == msg {
		return
	}
	st.lastGoneWarning = msg
	log.FromContext(ctx).Info("operator gone during cleanup", "message", msg)
	ns := &corev1.Namespace{}
	if err := r.live.Get(ctx, types.NamespacedName{Name: csv.Namespace}, ns); err == nil && isDeleting(ns) {
		r.recorder.Eventf(ns, csv, corev1.EventTypeWarning, string(reason), "Cleanup", "CSV %s/%s: %s", csv.Namespace, csv.Name, msg)
		return
	}
	r.recorder.Eventf(csv, nil, corev1.EventTypeWarning, string(reason), "Cleanup", "%s", msg)
}

// strategyDeployment is one Deployment of a CSV's install strategy, as the API server has it (dep nil:
// not found).
type strategyDeployment struct {
	name string
	dep  *appsv1.Deployment
}

// strategyDeployments reads the CSV live (the cache strips the install strategy) and each Deployment it
// names. None when the CSV is gone or names none.
func (r *Reconciler) strategyDeployments(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) ([]strategyDeployment, error) {
	full := &v1alpha1.ClusterServiceVersion{}
	if err := r.live.Get(ctx, keyOf(csv), full); err != nil {
		return nil, client404(err, "reading CSV "+keyOf(csv).String())
	}
	var out []strategyDeployment
	for _, d := range full.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		dep := &appsv1.Deployment{}
		err := r.live.Get(ctx, types.NamespacedName{Namespace: csv.Namespace, Name: d.Name}, dep)
		switch {
		case apierrors.IsNotFound(err):
			dep = nil
		case err != nil:
			return nil, fmt.Errorf("reading Deployment %s/%s: %w", csv.Namespace, d.Name, err)
		}
		out = append(out, strategyDeployment{name: d.Name, dep: dep})
	}
	return out, nil
}

// deploymentTargets returns the union of olm.targetNamespaces on the pod templates of the CSV's
// Deployments, as OLM merges the CSV's annotations into them: the namespaces the operator watches (its
// WATCH_NAMESPACE comes from that annotation). ok is false when no Deployment carries it.
func (r *Reconciler) deploymentTargets(ctx context.Context, csv *v1alpha1.ClusterServiceVersion) (targets, bool, error) {
	deps, err := r.strategyDeployments(ctx, csv)
	if err != nil {
		return targets{}, false, err
	}
	var out targets
	found := false
	for _, d := range deps {
		v, ok := "", false
		if d.dep != nil {
			v, ok = d.dep.Spec.Template.Annotations[targetNamespacesAnno]
		}
		if !ok {
			continue
		}
		t := parseTargets(v, "Deployment "+d.name)
		if found {
			t = out.union(t)
		}
		out, found = t, true
	}
	return out, found, nil
}
