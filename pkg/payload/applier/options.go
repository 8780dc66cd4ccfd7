package applier

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"
)

// Mode is how a payload is applied.
type Mode string

const (
	// ModeInstall is the first apply of a payload: delete-annotated manifests are skipped (never
	// created, never deleted); their progress is still reported.
	ModeInstall Mode = "install"
	// ModeUpdate applies a new payload: delete-annotated objects are deleted (one Delete, no wait).
	ModeUpdate Mode = "update"
	// ModeReconcile re-applies the current payload: no new deletes are issued, delete progress is
	// reported.
	ModeReconcile Mode = "reconcile"
)

// ParseMode parses install, update or reconcile.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeInstall, ModeUpdate, ModeReconcile:
		return m, nil
	}
	return "", fmt.Errorf("invalid mode %q: want install, update or reconcile", s)
}

// Defaults.
const (
	DefaultClusterOperatorName    = "payload-applier"
	DefaultFieldManager           = "payload-applier"
	DefaultMaxParallelism         = 4
	DefaultClusterOperatorTimeout = 10 * time.Minute
	DefaultPollInterval           = time.Second
	DefaultTaskRetryTimeout       = 30 * time.Second
	// StateConfigMapSuffix names the default state ConfigMap: <ClusterOperatorName>-state.
	StateConfigMapSuffix = "-state"
)

// Options configure an Applier. Zero values take the defaults above.
type Options struct {
	// Namespace is the applier's own namespace: it holds the state ConfigMap and is listed in the
	// ClusterOperator's relatedObjects. Without it (and without StateStore) state is kept in memory.
	Namespace string
	// ClusterOperatorName is the applier's own ClusterOperator (default "payload-applier").
	ClusterOperatorName string
	// DisableStatus turns off the applier's own ClusterOperator.
	DisableStatus bool
	// StateConfigMapName is the ConfigMap persisting delete progress (default <ClusterOperatorName>-state).
	StateConfigMapName string
	// StateStore overrides where delete progress is persisted.
	StateStore StateStore
	// MaxParallelism bounds how many components of one run level are applied at once (default 4).
	MaxParallelism int
	// ClusterOperatorTimeout bounds the wait for a payload ClusterOperator to report its versions.
	ClusterOperatorTimeout time.Duration
	// ClusterOperatorDegradedGrace is how long an update or reconcile waits on a degraded payload
	// ClusterOperator (counted from the start of its wait, across passes) before its task fails
	// (default 40m, the CVO's).
	ClusterOperatorDegradedGrace time.Duration
	// PollInterval is how often a ClusterOperator is polled while waiting.
	PollInterval time.Duration
	// TaskRetryTimeout bounds the in-pass retries of transient errors (no REST mapping yet, conflicts,
	// server timeouts). Permanent errors (invalid annotation, empty name) are never retried in a pass.
	TaskRetryTimeout time.Duration
	// FieldManager for server-side apply (default "payload-applier"); ownership is always forced.
	FieldManager string
	// Force skips the Upgradeable precondition of minor/major updates (like `oc adm upgrade --force`).
	Force bool
	// Logger receives every progress message.
	Logger logr.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.ClusterOperatorName == "" {
		o.ClusterOperatorName = DefaultClusterOperatorName
	}
	if o.StateConfigMapName == "" {
		o.StateConfigMapName = o.ClusterOperatorName + StateConfigMapSuffix
	}
	if o.MaxParallelism <= 0 {
		o.MaxParallelism = DefaultMaxParallelism
	}
	if o.ClusterOperatorTimeout <= 0 {
		o.ClusterOperatorTimeout = DefaultClusterOperatorTimeout
	}
	if o.ClusterOperatorDegradedGrace <= 0 {
		o.ClusterOperatorDegradedGrace = DefaultClusterOperatorDegradedGrace
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.TaskRetryTimeout <= 0 {
		o.TaskRetryTimeout = DefaultTaskRetryTimeout
	}
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
