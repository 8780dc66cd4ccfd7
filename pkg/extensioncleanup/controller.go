package extensioncleanup

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/cleanuppass"
)

// Reconciler is the ordered-uninstall controller for OLM v1 ClusterExtensions. Build it with New and
// register it with SetupWithManager (or AddWhenServed, which waits for the ClusterExtension API).
type Reconciler struct {
	opts     Options
	client   client.Client // writes (patches, status, CR deletes)
	live     client.Reader // uncached reads: everything but the ClusterExtensions
	recorder recorder.EventRecorder
	runner   *cleanuppass.Runner

	mu    sync.Mutex
	state map[string]*ceState
}

// ceState is the in-memory bookkeeping of one ClusterExtension under cleanup (lost on restart: the stall
// clock then starts again).
type ceState struct {
	lowest      int // the lowest pending count seen
	stallSince  time.Time
	lastWarn    time.Time
	lastWarnKey string
	quietUntil  time.Time // a foreground wait ended: nothing is done before (gcSettle)
	releasedAt  time.Time // the holds were released: the finalizer goes gcSettle later (letGo)
}

// New returns the controller for mgr.
func New(mgr manager.Manager, opts Options) *Reconciler {
	opts = opts.withDefaults()
	r := &Reconciler{opts: opts, client: mgr.GetClient(), live: mgr.GetAPIReader(),
		recorder: mgr.GetEventRecorder(ControllerName), state: map[string]*ceState{}}
	r.runner = &cleanuppass.Runner{Live: r.live, Client: r.client, Sem: make(chan struct{}, opts.DeleteConcurrency),
		ReverifyEvery: cleanuppass.DefaultReverifyEvery, MaxListed: opts.MaxPendingListed}
	return r
}

// SetupWithManager watches ClusterExtensions (unstructured: operator-controller is not a dependency)
// and adds the sweep of holds whose ClusterExtension is gone, at start.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(ClusterExtensionGVK)
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(ce).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
	if err != nil {
		return err
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		// Retried: no event brings a ClusterExtension that went while the controller was down back to
		// Reconcile, and an object it held keeps the holder's reference until a sweep succeeds.
		for attempt := 1; ; attempt++ {
			err := r.sweep(ctx, "")
			if err == nil {
				return nil
			}
			log.FromContext(ctx).Error(err, "sweeping holds at start", "attempt", attempt)
			if attempt == 5 {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
	}))
}

// Served reports whether the API server serves ClusterExtensions (OLM v1 installed).
func Served(mgr manager.Manager) (bool, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(ClusterExtensionGVK.GroupKind(), ClusterExtensionGVK.Version)
	if meta.IsNoMatchError(err) || discovery.IsGroupDiscoveryFailedError(err) {
		return false, nil
	}
	return err == nil, err
}

// AddWhenServed sets the controller up on mgr now if ClusterExtensions are served, else adds a
// runnable that checks every interval and sets it up once OLM v1 is installed: a cluster without OLM v1
// runs the OLM v0 controller alone.
func AddWhenServed(mgr manager.Manager, opts Options, interval time.Duration) error {
	// An error (discovery failing at start) is not fatal: the runnable below looks again.
	if ok, err := Served(mgr); err == nil && ok {
		return New(mgr, opts).SetupWithManager(mgr)
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			if ok, err := Served(mgr); err != nil || !ok {
				continue
			}
			log.FromContext(ctx).Info("ClusterExtension API served: starting the OLM v1 ordered-uninstall controller")
			return New(mgr, opts).SetupWithManager(mgr)
		}
	}))
}

func (r *Reconciler) stateFor(name string) *ceState {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state[name]
	if s == nil {
		s = &ceState{lowest: -1}
		r.state[name] = s
	}
	return s
}

func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	delete(r.state, name)
	r.mu.Unlock()
}
