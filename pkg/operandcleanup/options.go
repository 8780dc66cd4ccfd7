package operandcleanup

import (
	"fmt"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// Names this controller writes or reads on cluster objects.
const (
	// Finalizer is put on a CSV that opted in to cleanup (spec.cleanup.enabled: true). It keeps the CSV, and
	// therefore the operator Deployment it owns, alive until every operand is gone.
	Finalizer = "operatorframework.io/cleanup-apis"
	// UnarmedGuardName names the ValidatingAdmissionPolicy, and its binding, that refuse to delete an
	// opted-in CSV this controller has not armed yet, i.e. without Finalizer
	// (config/operand-cleanup/42-unarmed-csv-guard.yaml): deleted before the controller's first reconcile
	// of it, its operator would go and its operands stay, their finalizers never to run. It also refuses a
	// foreground delete of an opted-in CSV, which would have the GC delete the operator first.
	UnarmedGuardName = "unarmed-csvs.cleanup-e2e.io"

	// HandOverAnnotation is set (to the predecessor's name) on a successor together with
	// spec.cleanup.enabled: true when an upgrade hands the opt-in over. It is handed over once: a value the
	// user sets on the successor afterwards is theirs.
	HandOverAnnotation = "operatorframework.io/cleanup-handed-over-from"

	// UninstallTargetsAnnotation records, on a CSV being deleted, the target namespaces its operator watched
	// when the uninstall began (OLM's olm.targetNamespaces encoding: comma-joined, "" for all namespaces).
	// It is written before the first operand Delete and never changed after. OLM keeps rewriting
	// olm.targetNamespaces on a CSV being deleted when its OperatorGroup changes, but no longer updates
	// the operator's Deployment: the operator goes on watching these namespaces, so the CRs being deleted
	// there are waited for until they are gone, while Deletes go only where both sets agree.
	UninstallTargetsAnnotation = "operatorframework.io/cleanup-uninstall-targets"

	// StallTimeoutAnnotation on a CSV overrides Options.StallTimeout for that CSV (a Go duration, e.g. "30s").
	StallTimeoutAnnotation = "operatorframework.io/cleanup-stall-timeout"

	// RBACFinalizer is put on the ClusterRoles/ClusterRoleBindings OLM made for a CSV (labels olm.owner,
	// olm.owner.namespace, olm.owner.kind=ClusterServiceVersion) while that CSV has cleanup enabled and is
	// not being replaced. OLM deletes them as soon as the CSV is deleted; the finalizer keeps them (with a
	// deletionTimestamp, still honoured by the RBAC authorizer) until the cleanup is over, so the operator
	// keeps exactly the permissions it had. Nothing is copied and nothing is granted.
	RBACFinalizer = "operatorframework.io/cleanup-rbac"

	// PhaseCleanup is the CSV phase while operands are pending deletion. The API has no constant for it
	// (status.phase is a free string).
	PhaseCleanup v1alpha1.ClusterServiceVersionPhase = "Cleanup"
	// ReasonWaitingOnCleanup is the API's constant ("WaitingOnCleanup"), not the enhancement's "CleanupWaiting".
	ReasonWaitingOnCleanup = v1alpha1.CSVReasonWaitingForCleanupToComplete

	// ReasonOperatorGone (phase Cleanup) says the operator that must remove the operands' finalizers is
	// not running any more (e.g. its namespace is terminating): the cleanup cannot finish by itself.
	ReasonOperatorGone v1alpha1.ConditionReason = "OperatorGone"
	// ReasonOperatorNotRunning (phase Cleanup) says the operator's Deployments exist but none has an
	// available replica (e.g. scaled to 0): the cleanup resumes once one runs again.
	ReasonOperatorNotRunning v1alpha1.ConditionReason = "OperatorNotRunning"

	// Final states, written (phase PhaseCleanupOver) before the CSV finalizer is removed, so that a CSV
	// held by another finalizer never shows a cleanup that is over as still waiting.
	PhaseCleanupOver                                = v1alpha1.CSVPhaseDeleting
	ReasonCleanupCompleted v1alpha1.ConditionReason = "CleanupCompleted"
	ReasonCleanupAborted   v1alpha1.ConditionReason = "CleanupAborted"
	// ReasonCleanupSkipped: deleting this CSV was not an uninstall (another CSV of the installation, the
	// one it replaces, is still installed).
	ReasonCleanupSkipped v1alpha1.ConditionReason = "CleanupSkipped"

	// Event reasons (on the CSV; on its Namespace when the CSV's namespace is terminating).
	EventReasonStalled      = "CleanupStalled"
	EventReasonBlocked      = "CleanupBlocked"
	EventReasonCompleted    = string(ReasonCleanupCompleted)
	EventReasonAborted      = string(ReasonCleanupAborted)
	EventReasonSkipped      = string(ReasonCleanupSkipped)
	EventReasonOperatorGone = string(ReasonOperatorGone)
	EventReasonNotRunning   = string(ReasonOperatorNotRunning)
	EventReasonUpgrade      = "CleanupSkippedForUpgrade"

	// ControllerName names the controller, its event recorder and its field manager.
	ControllerName = "operand-cleanup"
)

// Labels and annotations OLM sets; read only.
const (
	olmOwnerLabel          = "olm.owner"
	olmOwnerNamespaceLabel = "olm.owner.namespace"
	olmOwnerKindLabel      = "olm.owner.kind"
	olmOwnerKindCSV        = "ClusterServiceVersion"
	targetNamespacesAnno   = "olm.targetNamespaces" // operators/v1.OperatorGroupTargetsAnnotationKey
)

// Options tune the controller. Zero values take the defaults below.
type Options struct {
	// MaxPendingListed caps the number of instances listed in status.cleanup.pendingDeletion (the message
	// always carries the total). Default 100.
	MaxPendingListed int
	// StallTimeout is how long the pending count may stay without decreasing before a CleanupStalled
	// Warning event is emitted (and again every StallTimeout while stalled). Default 10m.
	StallTimeout time.Duration
	// DeleteConcurrency bounds the Delete calls in flight across all CSVs. Default 16.
	DeleteConcurrency int
	// ResyncInterval is the backstop requeue of a CSV whose cleanup is pending or blocked; progress is
	// otherwise driven by watch events on the operands. Default 1m.
	ResyncInterval time.Duration
	// StatusUpdateInterval is the minimum time between two status writes of one CSV while only the
	// pending list changes (the first write of a cleanup is immediate). Default 2s.
	StatusUpdateInterval time.Duration
	// ListPageSize is the limit of one list call of a cleanup pass (operands are listed live, page by
	// page, and never cached). Default 500.
	ListPageSize int
	// OperatorCheckInterval spaces the live reads that tell whether the operator of a pending cleanup
	// still runs (its Deployments, its namespace); a pending cleanup is looked at again at least every
	// twice this, so a vanished operator is reported (reason OperatorGone) within 2× it even when no
	// operand event comes. Default 5s.
	OperatorCheckInterval time.Duration
	// MaxConcurrentReconciles for the CSV controller. Default 4.
	MaxConcurrentReconciles int
	// Now returns the current time (tests). Default time.Now.
	Now func() time.Time
}

// Defaults used when Options leave a field zero.
const (
	DefaultMaxPendingListed        = 100
	DefaultStallTimeout            = 10 * time.Minute
	DefaultDeleteConcurrency       = 16
	DefaultResyncInterval          = time.Minute
	DefaultStatusUpdateInterval    = 2 * time.Second
	DefaultMaxConcurrentReconciles = 4
	DefaultOperatorCheckInterval   = 5 * time.Second
	DefaultListPageSize            = 500
)

func (o Options) withDefaults() Options {
	if o.MaxPendingListed <= 0 {
		o.MaxPendingListed = DefaultMaxPendingListed
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.DeleteConcurrency <= 0 {
		o.DeleteConcurrency = DefaultDeleteConcurrency
	}
	if o.ResyncInterval <= 0 {
		o.ResyncInterval = DefaultResyncInterval
	}
	if o.StatusUpdateInterval < 0 {
		o.StatusUpdateInterval = 0
	} else if o.StatusUpdateInterval == 0 {
		o.StatusUpdateInterval = DefaultStatusUpdateInterval
	}
	if o.ListPageSize <= 0 {
		o.ListPageSize = DefaultListPageSize
	}
	if o.OperatorCheckInterval <= 0 {
		o.OperatorCheckInterval = DefaultOperatorCheckInterval
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// stallTimeoutFor returns the CSV's annotation override, or the default. A malformed value falls back to
// the default and is reported in the returned error (logged, never fatal).
func (o Options) stallTimeoutFor(csv *v1alpha1.ClusterServiceVersion) (time.Duration, error) {
	v, ok := csv.GetAnnotations()[StallTimeoutAnnotation]
	if !ok {
		return o.StallTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return o.StallTimeout, fmt.Errorf("annotation %s=%q is not a positive duration; using %s", StallTimeoutAnnotation, v, o.StallTimeout)
	}
	return d, nil
}
