package operandcleanup

import (
	"context"
	"fmt"
	"sync"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Reconciler is the operand-cleanup controller. Build it with New and register it with SetupWithManager.
type Reconciler struct {
	opts     Options
	client   client.Client // writes (and metadata deletes)
	cache    cache.Cache   // reads: CSVs (stripped), OperatorGroups, cluster RBAC
	live     client.Reader // uncached reads: operands (pass.go), CRDs, re-verification before deletes
	recorder recorder.EventRecorder

	watches   *operandWatches
	deleteSem chan struct{}
	// A pass's list limit (0: DefaultListPageSize) and how old the live verification a page's deletes
	// rely on may be (0: every page is re-verified); tests make both small.
	pageSize      int64
	reverifyEvery time.Duration
	// sweep carries the held cluster RBAC objects sweepRBAC finds to the controller (mapped to their CSV).
	sweep chan event.GenericEvent

	mu    sync.Mutex
	state map[types.NamespacedName]*csvState
}

// csvState is the in-memory bookkeeping of one CSV under cleanup (lost on restart, rebuilt from status).
type csvState struct {
	plan        *plan
	planKey     string
	planExpires time.Time
	// nextPass throttles passes that only re-list (runCleanup).
	nextPass time.Time

	stallCount int
	stallSince time.Time
	lastWarn   time.Time

	lastStatusWrite time.Time
	lastBlocked     string
	// waitsOn: the CSV OLM has not placed yet that blocks this cleanup (errNoTargets.on); under
	// Reconciler.mu, which mapToWaiting reads it with.
	waitsOn types.NamespacedName

	// operator liveness (operator.go): last check, its answer, the last OperatorGone warning emitted.
	operatorCheckedAt time.Time
	operatorGone      operatorTrouble
	lastGoneWarning   string
}

// New returns the controller for mgr. Call SetupWithManager before starting the manager.
func New(mgr manager.Manager, opts Options) *Reconciler {
	opts = opts.withDefaults()
	return &Reconciler{
		opts:          opts,
		client:        mgr.GetClient(),
		cache:         mgr.GetCache(),
		live:          mgr.GetAPIReader(),
		recorder:      mgr.GetEventRecorder(ControllerName),
		watches:       newOperandWatches(mgr.GetAPIReader(), nil), // its watcher is made in SetupWithManager
		deleteSem:     make(chan struct{}, opts.DeleteConcurrency),
		pageSize:      int64(opts.ListPageSize),
		reverifyEvery: defaultReverifyEvery,
		sweep:         make(chan event.GenericEvent),
		state:         map[types.NamespacedName]*csvState{},
	}
}

// SetupWithManager registers indexes, metrics and watches. The manager's scheme must hold operators
// v1alpha1 and v1, rbac/v1 and apiextensions/v1 (see AddToScheme); its cache should be configured with
// CacheOptions for bounded memory.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if err := RegisterMetrics(); err != nil {
		return err
	}
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.ClusterServiceVersion{}, replacesField, indexReplaces); err != nil {
		return fmt.Errorf("indexing %s: %w", replacesField, err)
	}
	rbacKinds := []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}}
	for _, obj := range rbacKinds {
		if err := idx.IndexField(ctx, obj, rbacOwnerField, olmOwnerKey); err != nil {
			return err
		}
		if err := idx.IndexField(ctx, obj, rbacHeldField, heldKey); err != nil {
			return err
		}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.ClusterServiceVersion{}, builder.WithPredicates(csvChanged())).
		// A new (or removed) successor re-evaluates the CSV it replaces, and a predecessor's changes its
		// successors (e.g. the predecessor's removal makes a successor the whole installation).
		Watches(&v1alpha1.ClusterServiceVersion{}, handler.EnqueueRequestsFromMapFunc(mapToReplaced)).
		Watches(&v1alpha1.ClusterServiceVersion{}, handler.EnqueueRequestsFromMapFunc(r.mapToSuccessors)).
		Watches(&v1alpha1.ClusterServiceVersion{}, handler.EnqueueRequestsFromMapFunc(r.mapToWaiting)).
		Watches(&operatorsv1.OperatorGroup{}, handler.EnqueueRequestsFromMapFunc(r.mapOperatorGroup))
	for _, obj := range rbacKinds {
		b = b.Watches(obj, handler.EnqueueRequestsFromMapFunc(mapRBAC), builder.WithPredicates(rbacRelevant()))
	}
	watcher, err := client.NewWithWatch(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()})
	if err != nil {
		return fmt.Errorf("client for operand watches: %w", err)
	}
	r.watches.watcher = watcher
	_, err = b.WatchesRawSource(source.Channel(r.sweep, handler.EnqueueRequestsFromMapFunc(mapRBAC))).
		WatchesRawSource(r.watches.source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.MaxConcurrentReconciles}).
		Build(r)
	if err != nil {
		return err
	}
	// Leader-only, like the controller: releases RBACFinalizer left on objects whose CSV is gone.
	return mgr.Add(manager.RunnableFunc(r.sweepRBAC))
}

func (r *Reconciler) stateFor(key types.NamespacedName) *csvState {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state[key]
	if s == nil {
		s = &csvState{}
		r.state[key] = s
	}
	return s
}

// forget drops everything kept in memory for a CSV whose cleanup is over (or never ran).
func (r *Reconciler) forget(key types.NamespacedName) {
	r.watches.untrack(key)
	r.mu.Lock()
	delete(r.state, key)
	r.mu.Unlock()
	forgetMetrics(key.Namespace, key.Name)
}

var _ reconcile.Reconciler = &Reconciler{}
