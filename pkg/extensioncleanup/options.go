package extensioncleanup

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Names this controller writes or reads on cluster objects. They are this project's convention (domain
// cleanup-e2e.io), not OLM v1 API: upstream has no ordered uninstall and no orphan policy.
const (
	// UninstallAnnotation on a ClusterExtension chooses what deleting it does (docs/olm-v1.md):
	// ModeDeleteOperands or ModeOrphan; absent (or any other value, reported) is OLM v1's own behaviour.
	UninstallAnnotation = "cleanup-e2e.io/uninstall"
	// ModeDeleteOperands: the custom resources of the kinds the extension owns are deleted, and finalized
	// by the still-running operator, before the CRDs, the operator and its RBAC go.
	ModeDeleteOperands = "delete-operands"
	// ModeOrphan: the extension's CRDs (and so every CR) stay; everything else goes as upstream does.
	ModeOrphan = "orphan"

	// Finalizer holds an opted-in ClusterExtension (and, with background deletion, every object it owns)
	// until its uninstall is over.
	Finalizer = "cleanup-e2e.io/uninstall"

	// OrphanedFromAnnotation marks a CRD an orphan uninstall left behind ("<name>/<uid>" of the
	// ClusterExtension); the holder reference on such a CRD is dropped once that ClusterExtension is gone.
	OrphanedFromAnnotation = "cleanup-e2e.io/orphaned-from"

	// HeldByAnnotation marks a CRD the holder holds, with the holder's UID, in the same write as its
	// reference: the orphan guard then refuses any write that drops that reference but keeps the mark.
	HeldByAnnotation = "cleanup-e2e.io/held-by"

	// DefaultHolderName is the cluster-scoped object whose owner reference keeps an opted-in extension's
	// objects from the garbage collector: the controller's own ClusterRole (config/operand-cleanup), live
	// wherever the controller is installed. Uninstalling the controller releases every hold.
	DefaultHolderName = "operand-cleanup"

	// ConditionType is this controller's condition on the ClusterExtension.
	ConditionType = "cleanup-e2e.io/Uninstall"

	// Reasons of ConditionType (also event reasons).
	ReasonHolding            = "Holding"            // opted in, installed: the objects to keep are held
	ReasonWaitingOnCleanup   = "WaitingOnCleanup"   // deleted: CRs pending deletion
	ReasonOperatorGone       = "OperatorGone"       // deleted: no operator Deployment left to finalize CRs
	ReasonOperatorNotRunning = "OperatorNotRunning" // deleted: the operator's Deployments have no available replica
	ReasonStalled            = "CleanupStalled"     // pending count not decreasing for Options.StallTimeout
	ReasonBlocked            = "CleanupBlocked"     // cannot hold or plan (the message says how to fix it)
	ReasonCompleted          = "CleanupCompleted"   // every CR gone: released
	ReasonAborted            = "CleanupAborted"     // opted out while deleted: released at once
	ReasonOrphaned           = "Orphaned"           // the CRDs were left behind: released
	ReasonInvalid            = "InvalidAnnotation"  // an UninstallAnnotation value this controller does not know
	ReasonForegroundEnded    = "ForegroundEnded"    // event: a foreground deletion is held as a background one

	// ControllerName names the controller, its event recorder and its field manager.
	ControllerName = "extension-cleanup"
)

// Labels and annotations OLM v1 (operator-controller v1.2.0) sets; read only.
const (
	ownerKindLabel = "olm.operatorframework.io/owner-kind" // internal/operator-controller/labels
	// OwnerNameLabel names the ClusterExtension of every object operator-controller installs.
	OwnerNameLabel     = "olm.operatorframework.io/owner-name"
	targetNamespacesAn = "olm.targetNamespaces" // on the Deployments' pod templates (rukpak/convert)
)

// ClusterExtensionGVK is OLM v1's ClusterExtension (read as unstructured: operator-controller is not a
// dependency of this module).
var ClusterExtensionGVK = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterExtension"}

// Options tune the controller. Zero values take the defaults.
type Options struct {
	// HolderName is the holder ClusterRole. Default DefaultHolderName.
	HolderName string
	// MaxPendingListed caps the pending CRs named in the condition (the message carries the total). Default 10.
	MaxPendingListed int
	// StallTimeout: a pending count not decreasing for this long emits a CleanupStalled Warning naming the
	// blocking CRs and their finalizers. Default 2m.
	StallTimeout time.Duration
	// PollInterval re-lists a pending cleanup (CR deletions are not watched). Default 2s.
	PollInterval time.Duration
	// HoldResync re-checks the holds of an installed opted-in extension (helm may recreate an object).
	// Default 30s.
	HoldResync time.Duration
	// DeleteConcurrency bounds the CR Deletes in flight. Default 16.
	DeleteConcurrency int

	// gcSettle is how long the controller waits after ending a foreground wait, and after a release,
	// before it acts on the ClusterExtension again: a strip the GC decided before lands within it.
	// Default 3s; tests lengthen it to stop the controller inside it (export_test.go).
	gcSettle time.Duration
	// breakReleaseEarly makes the controller release after its first complete pass, before the CRs are
	// finalized: the lifecycle test must catch it (export_test.go).
	breakReleaseEarly bool
}

func (o Options) withDefaults() Options {
	if o.HolderName == "" {
		o.HolderName = DefaultHolderName
	}
	if o.MaxPendingListed <= 0 {
		o.MaxPendingListed = 10
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 2 * time.Minute
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.HoldResync <= 0 {
		o.HoldResync = 30 * time.Second
	}
	if o.DeleteConcurrency <= 0 {
		o.DeleteConcurrency = 16
	}
	if o.gcSettle <= 0 {
		o.gcSettle = 3 * time.Second
	}
	return o
}
