package extensioncleanup

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// WithBrokenReleaseEarly is opts for a deliberately broken controller (the lifecycle test's broken variant).
func WithBrokenReleaseEarly(opts Options) Options {
	opts.breakReleaseEarly = true
	return opts
}

// WithGCSettle is opts for a controller that waits d after a release before it lets the ClusterExtension go.
func WithGCSettle(opts Options, d time.Duration) Options {
	opts.gcSettle = d
	return opts
}

// CheckOrphanGuard is what the controller checks before it marks a CRD orphaned.
var CheckOrphanGuard = checkOrphanGuard

// ReconcileStale runs one Reconcile of stale's name by a controller of mgr (not started: only its API
// reader and writes are used) whose cache still holds stale, a copy of the ClusterExtension read earlier:
// the informer lagging behind the controller's own finish.
func ReconcileStale(ctx context.Context, mgr manager.Manager, opts Options, stale *unstructured.Unstructured) (ctrl.Result, error) {
	r := New(mgr, opts)
	r.client = staleCache{Client: r.client, ce: stale.DeepCopy()}
	return r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(stale)})
}

// staleCache answers a Get of the ClusterExtension with its stale copy; everything else goes to Client.
type staleCache struct {
	client.Client
	ce *unstructured.Unstructured
}

func (s staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == ClusterExtensionGVK && key.Name == s.ce.GetName() {
		s.ce.DeepCopyInto(u)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}
