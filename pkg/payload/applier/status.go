package applier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// Condition reasons of the applier's own ClusterOperator (besides payload.ReasonAsExpected and
// payload.ReasonResourceDeletionInProgress).
const (
	ReasonInstalling                = "Installing"
	ReasonApplyingPayload           = "ApplyingPayload"
	ReasonWaitingOnClusterOperators = "WaitingOnClusterOperators"
	ReasonApplyFailed               = "ApplyFailed"
	ReasonInvalidDeleteAnnotation   = "InvalidDeleteAnnotation"
	ReasonClusterOperatorNotReady   = "ClusterOperatorNotReady"
	// The CVO's reasons for these two (pkg/cvo/internal/operatorstatus.go).
	ReasonClusterOperatorNotAvailable = "ClusterOperatorNotAvailable"
	ReasonClusterOperatorDegraded     = "ClusterOperatorDegraded"
	ReasonMultipleErrors              = "MultipleErrors"
	ReasonUpgradeBlocked              = "UpgradeBlocked"
)

type phase int

const (
	phaseRunning phase = iota
	phaseDone
	phaseBlocked
)

type statusInput struct {
	run   *runState
	phase phase
	err   error
}

// writeStatus maintains the applier's own ClusterOperator. Failures are reported as warnings (once a
// pass), never fatal.
func (a *Applier) writeStatus(ctx context.Context, in statusInput) {
	if a.opts.DisableStatus {
		return
	}
	a.statusMu.Lock()
	defer a.statusMu.Unlock()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return a.writeStatusOnce(ctx, in) })
	if err != nil {
		in.run.mu.Lock()
		warned := in.run.statusWarned
		in.run.statusWarned = true
		in.run.mu.Unlock()
		if !warned {
			a.message(in.run, nil, SeverityWarning, fmt.Sprintf("Cannot update cluster operator %s: %v", a.opts.ClusterOperatorName, err))
		}
	}
}

func (a *Applier) writeStatusOnce(ctx context.Context, in statusInput) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(configv1.ClusterOperatorGVK)
	err := a.c.Get(ctx, client.ObjectKey{Name: a.opts.ClusterOperatorName}, live)
	if apierrors.IsNotFound(err) {
		live = newClusterOperator(&unstructured.Unstructured{Object: map[string]interface{}{
			"metadata": map[string]interface{}{"name": a.opts.ClusterOperatorName}}})
		err = a.c.Create(ctx, live)
	}
	if err != nil {
		return err
	}
	var co configv1.ClusterOperator
	if err := fromUnstructured(live, &co); err != nil {
		return err
	}
	now := metav1.NewTime(a.opts.Now().UTC().Truncate(1e9))
	conds := a.conditions(in, &co.Status)
	for i := range conds {
		conds[i].LastTransitionTime = now
		if old := co.Status.FindCondition(conds[i].Type); old != nil && old.Status == conds[i].Status {
			conds[i].LastTransitionTime = old.LastTransitionTime
		}
	}
	deployed, _ := a.state.version()
	var versions []configv1.OperandVersion
	if deployed != "" {
		versions = []configv1.OperandVersion{{Name: "operator", Version: deployed}}
	}
	related := a.relatedObjects(in.run)

	if err := setNested(live, conds, "status", "conditions"); err != nil {
		return err
	}
	if versions != nil {
		if err := setNested(live, versions, "status", "versions"); err != nil {
			return err
		}
	} else {
		unstructured.RemoveNestedField(live.Object, "status", "versions")
	}
	if err := setNested(live, related, "status", "relatedObjects"); err != nil {
		return err
	}
	return a.c.Status().Update(ctx, live)
}

func (a *Applier) conditions(in statusInput, old *configv1.ClusterOperatorStatus) []configv1.ClusterOperatorStatusCondition {
	deployed, _ := a.state.version()
	target := in.run.version
	cond := func(t configv1.ClusterStatusConditionType, s configv1.ConditionStatus, reason, msg string) configv1.ClusterOperatorStatusCondition {
		return configv1.ClusterOperatorStatusCondition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	var out []configv1.ClusterOperatorStatusCondition

	// Available: the last completely applied version.
	if deployed != "" {
		out = append(out, cond(configv1.OperatorAvailable, configv1.ConditionTrue, payload.ReasonAsExpected, "Payload applier has deployed "+deployed))
	} else {
		out = append(out, cond(configv1.OperatorAvailable, configv1.ConditionFalse, ReasonInstalling, "Payload applier has not deployed a payload yet"))
	}

	// Progressing and Degraded.
	var failure *PassError
	errors.As(in.err, &failure)
	switch in.phase {
	case phaseRunning:
		in.run.mu.Lock()
		waiting := make([]string, 0, len(in.run.waiting))
		for n := range in.run.waiting {
			waiting = append(waiting, n)
		}
		in.run.mu.Unlock()
		sort.Strings(waiting)
		switch {
		case len(waiting) > 0:
			out = append(out, cond(configv1.OperatorProgressing, configv1.ConditionTrue, ReasonWaitingOnClusterOperators,
				fmt.Sprintf("Working towards %s: waiting on %s", target, strings.Join(waiting, ", "))))
		case in.run.mode == ModeReconcile && target == deployed:
			out = append(out, cond(configv1.OperatorProgressing, configv1.ConditionFalse, payload.ReasonAsExpected, "Payload version is "+deployed))
		default:
			out = append(out, cond(configv1.OperatorProgressing, configv1.ConditionTrue, ReasonApplyingPayload, "Working towards "+target))
		}
		if d := old.FindCondition(configv1.OperatorDegraded); d != nil {
			out = append(out, *d) // do not flap while a pass runs
		} else {
			out = append(out, cond(configv1.OperatorDegraded, configv1.ConditionFalse, payload.ReasonAsExpected, "All is well"))
		}
	case phaseBlocked:
		out = append(out, cond(configv1.OperatorProgressing, configv1.ConditionFalse, ReasonUpgradeBlocked,
			fmt.Sprintf("Update to %s blocked: resource deletions in progress", target)))
		if d := old.FindCondition(configv1.OperatorDegraded); d != nil {
			out = append(out, *d)
		} else {
			out = append(out, cond(configv1.OperatorDegraded, configv1.ConditionFalse, payload.ReasonAsExpected, "All is well"))
		}
	case phaseDone:
		if in.err == nil {
			out = append(out, cond(configv1.OperatorProgressing, configv1.ConditionFalse, payload.ReasonAsExpected, "Payload version is "+target))
			out = append(out, cond(configv1.OperatorDegraded, configv1.ConditionFalse, payload.ReasonAsExpected, "All is well"))
			break
		}
		short := "the pass was interrupted"
		reason := ReasonApplyFailed
		if failure != nil {
			reason = failureReason(failure)
			if len(failure.Errors) == 1 {
				short = failure.Errors[0].Ref + " failed"
			} else {
				short = fmt.Sprintf("%d manifests failed", len(failure.Errors))
			}
		}
		out = append(out, cond(configv1.OperatorProgressing, configv1.ConditionTrue, reason, fmt.Sprintf("Unable to apply %s: %s", target, short)))
		out = append(out, cond(configv1.OperatorDegraded, configv1.ConditionTrue, reason, in.err.Error()))
	}

	// Upgradeable: false while deletions are unverified.
	if pending := a.state.inProgressNames(); len(pending) > 0 {
		out = append(out, cond(configv1.OperatorUpgradeable, configv1.ConditionFalse, payload.ReasonResourceDeletionInProgress, payload.UpgradeableMessage(pending)))
	} else {
		out = append(out, cond(configv1.OperatorUpgradeable, configv1.ConditionTrue, payload.ReasonAsExpected, "All is well"))
	}
	return out
}

func failureReason(e *PassError) string {
	if len(e.Errors) != 1 {
		return ReasonMultipleErrors
	}
	var inv *payload.InvalidDeleteAnnotationError
	var nr *ClusterOperatorNotReadyError
	var na *ClusterOperatorNotAvailableError
	var dg *ClusterOperatorDegradedError
	switch {
	case errors.As(e.Errors[0].Err, &inv):
		return ReasonInvalidDeleteAnnotation
	case errors.As(e.Errors[0].Err, &nr):
		return ReasonClusterOperatorNotReady
	case errors.As(e.Errors[0].Err, &na):
		return ReasonClusterOperatorNotAvailable
	case errors.As(e.Errors[0].Err, &dg):
		return ReasonClusterOperatorDegraded
	}
	return ReasonApplyFailed
}

// relatedObjects: the applier's namespace and state ConfigMap, then what the payload manages.
func (a *Applier) relatedObjects(run *runState) []configv1.ObjectReference {
	var out []configv1.ObjectReference
	if a.opts.Namespace != "" {
		out = append(out, configv1.ObjectReference{Group: "", Resource: "namespaces", Name: a.opts.Namespace})
		if _, ok := a.state.store.(*ConfigMapStore); ok {
			out = append(out, configv1.ObjectReference{Group: "", Resource: "configmaps", Namespace: a.opts.Namespace, Name: a.opts.StateConfigMapName})
		}
	}
	managed := a.related
	if len(managed) == 0 {
		run.mu.Lock()
		managed = append([]configv1.ObjectReference(nil), run.related...)
		run.mu.Unlock()
	}
	return append(out, managed...)
}

func setNested(u *unstructured.Unstructured, v interface{}, fields ...string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var generic interface{}
	if err := json.Unmarshal(b, &generic); err != nil {
		return err
	}
	if generic == nil {
		generic = []interface{}{}
	}
	return unstructured.SetNestedField(u.Object, generic, fields...)
}

func fromUnstructured(u *unstructured.Unstructured, into interface{}) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}
