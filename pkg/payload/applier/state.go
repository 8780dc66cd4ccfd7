package applier

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
)

// DeleteRecord is the progress of one requested (or verified) deletion.
type DeleteRecord struct {
	Resource payload.Resource `json:"resource"`
	// Requested is when the Delete was issued (or when the object was first found absent).
	Requested *time.Time `json:"requested,omitempty"`
	// Expected is the object's deletionTimestamp when last seen.
	Expected *time.Time `json:"expected,omitempty"`
	// Verified is when the object was seen gone; nil while the deletion is in progress.
	Verified *time.Time `json:"verified,omitempty"`
	// UID is the UID of the object the Delete was issued for: an object of the same name with another
	// UID was created since and is not the one deleted. Empty when the object was found absent, and
	// in records written before UIDs were kept.
	UID types.UID `json:"uid,omitempty"`
}

// InProgress reports whether the deletion is unverified.
func (d DeleteRecord) InProgress() bool { return d.Verified == nil }

// isFor reports whether live is the object d's Delete was issued for. A record without a UID (written
// before they were kept) goes by the creation time: an object created after the Delete was requested
// is another one. Without this a re-created object kept its name's pending delete, and so
// Upgradeable=False, for ever.
func (d DeleteRecord) isFor(live metav1.Object) bool {
	if d.UID != "" {
		return live.GetUID() == d.UID
	}
	created := live.GetCreationTimestamp()
	return d.Requested == nil || created.IsZero() || !created.After(*d.Requested)
}

// State is what the applier persists between passes and restarts.
type State struct {
	// Version is the last completely applied payload version.
	Version string `json:"version,omitempty"`
	// Hash is that payload's content hash.
	Hash string `json:"hash,omitempty"`
	// Target is the version of an update under way: one whose pass started (the Upgradeable
	// precondition let it) and that no pass has completed since. The precondition compares a later
	// update with it, not with Version, as the CVO compares with ClusterVersion's status.desired:
	// the update's own deletes must not refuse it when it starts again after a restart or a
	// superseded pass. Empty when no update is under way.
	Target  string         `json:"target,omitempty"`
	Deletes []DeleteRecord `json:"deletes,omitempty"`
}

// StateStore persists State.
type StateStore interface {
	Load(ctx context.Context) (State, error)
	Save(ctx context.Context, s State) error
}

// MemoryStore keeps State in memory (no persistence across restarts; share one between Appliers to
// simulate it).
type MemoryStore struct {
	mu sync.Mutex
	s  State
}

func (m *MemoryStore) Load(context.Context) (State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return copyState(m.s), nil
}

func (m *MemoryStore) Save(_ context.Context, s State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.s = copyState(s)
	return nil
}

func copyState(s State) State {
	b, _ := json.Marshal(s)
	var out State
	_ = json.Unmarshal(b, &out)
	return out
}

// StateKey is the ConfigMap data key holding the JSON State.
const StateKey = "state.json"

// ConfigMapStore persists State as JSON in a ConfigMap (server-side applied, field manager
// FieldManager).
type ConfigMapStore struct {
	Client       client.Client
	Namespace    string
	Name         string
	FieldManager string
}

func (c *ConfigMapStore) Load(ctx context.Context) (State, error) {
	var cm corev1.ConfigMap
	err := c.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, &cm)
	if apierrors.IsNotFound(err) {
		return State{}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("load applier state from configmap %s/%s: %w", c.Namespace, c.Name, err)
	}
	var s State
	if data := cm.Data[StateKey]; data != "" {
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			return State{}, fmt.Errorf("configmap %s/%s key %s: %w", c.Namespace, c.Name, StateKey, err)
		}
	}
	return s, nil
}

func (c *ConfigMapStore) Save(ctx context.Context, s State) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(c.Namespace)
	u.SetName(c.Name)
	u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "payload-applier"})
	if err := unstructured.SetNestedStringMap(u.Object, map[string]string{StateKey: string(data)}, "data"); err != nil {
		return err
	}
	fm := c.FieldManager
	if fm == "" {
		fm = DefaultFieldManager
	}
	if err := c.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fm), client.ForceOwnership); err != nil {
		return fmt.Errorf("save applier state to configmap %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}
