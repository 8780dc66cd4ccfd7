package localruntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// Runtime runs registered operators for the Deployments of a cluster.
type Runtime struct {
	admin    *rest.Config
	registry *Registry
	logDir   string
	workDir  string // binaries built for the registry, the volumes of operators run as child processes
	log      logr.Logger
	tokens   tokenRequester

	client client.Client
	// reader reads what a pod's env refers to live, as the kubelet does: a ConfigMap created just
	// before its Deployment may not be in client's cache yet.
	reader  client.Reader
	changed chan event.GenericEvent

	mu        sync.Mutex
	ctx       context.Context
	instances map[types.NamespacedName]*instance
	warned    map[string]bool // unregistered-image warnings already logged, per deployment+image
	stopMgr   context.CancelFunc
	mgrDone   chan error
}

// Option configures a Runtime.
type Option func(*Runtime)

// WithWorkDir sets where binaries are built and child processes' volumes are written (default: a
// directory next to the logs).
func WithWorkDir(dir string) Option { return func(r *Runtime) { r.workDir = dir } }

// WithLogger sets where the runtime logs what it starts and stops.
func WithLogger(l logr.Logger) Option { return func(r *Runtime) { r.log = l } }

// New returns a runtime for the cluster behind admin. Operator logs go to logDir, one file per Deployment.
func New(admin *rest.Config, registry *Registry, logDir string, opts ...Option) *Runtime {
	r := &Runtime{admin: admin, registry: registry, logDir: logDir, log: logr.Discard(),
		instances: map[types.NamespacedName]*instance{}, warned: map[string]bool{},
		changed: make(chan event.GenericEvent, 64)}
	for _, o := range opts {
		o(r)
	}
	if r.workDir == "" {
		r.workDir = filepath.Join(logDir, "..", "runtime")
	}
	return r
}

func (r *Runtime) binDir() string { return filepath.Join(r.workDir, "bin") }
func (r *Runtime) podDir() string { return filepath.Join(r.workDir, "pods") }

// LogDir is where operator logs are written.
func (r *Runtime) LogDir() string { return r.logDir }

// LogFile is the file, in the log dir, that every start of Deployment key's operator appends to (in
// process or a child process). It stays once the Deployment is gone: what an uninstalled operator said
// last is still there.
func LogFile(key types.NamespacedName) string { return key.Namespace + "_" + key.Name + ".log" }

// Start watches Deployments until Stop is called. It returns once the watch is running.
func (r *Runtime) Start(ctx context.Context) error {
	if err := os.MkdirAll(r.logDir, 0o755); err != nil {
		return err
	}
	if err := r.registry.BuildBinaries(ctx, r.binDir(), r.log); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(r.admin)
	if err != nil {
		return err
	}
	r.tokens = cs.CoreV1()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(r.admin, ctrl.Options{
		Scheme:     scheme,
		Logger:     r.log,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("local runtime manager: %w", err)
	}
	r.client, r.reader = mgr.GetClient(), mgr.GetAPIReader()
	err = ctrl.NewControllerManagedBy(mgr).
		Named("local-runtime").
		For(&appsv1.Deployment{}).
		WatchesRawSource(source.Channel(r.changed, &handler.EnqueueRequestForObject{})).
		Complete(reconcile.Func(r.reconcile))
	if err != nil {
		return err
	}
	mctx, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	r.ctx, r.stopMgr, r.mgrDone = mctx, cancel, make(chan error, 1)
	r.mu.Unlock()
	go func() { r.mgrDone <- mgr.Start(mctx) }()
	syncCtx, cancelSync := context.WithTimeout(ctx, intervals.Get(intervals.RuntimeStarted))
	defer cancelSync()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		return fmt.Errorf("local runtime: its Deployment watch did not sync within %s (its list of Deployments did not complete in time; on a slow machine, %s stretches the wait)",
			intervals.Get(intervals.RuntimeStarted), envvar.WaitScale.Name)
	}
	return nil
}

// Stop stops every operator and the Deployment watch.
func (r *Runtime) Stop() error {
	r.mu.Lock()
	stop, done := r.stopMgr, r.mgrDone
	instances := r.instances
	r.instances = map[types.NamespacedName]*instance{}
	r.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	var errs []error
	for _, in := range instances {
		errs = append(errs, in.stop(intervals.Get(intervals.Stopped)))
	}
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Running lists the Deployments whose operators currently run.
func (r *Runtime) Running() []types.NamespacedName {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []types.NamespacedName
	for k, in := range r.instances {
		if running, _, _, _ := in.state(); running {
			out = append(out, k)
		}
	}
	return out
}

func (r *Runtime) notify(key types.NamespacedName) {
	dep := &appsv1.Deployment{}
	dep.Namespace, dep.Name = key.Namespace, key.Name
	select {
	case r.changed <- event.GenericEvent{Object: dep}:
	default: // a reconcile is already queued; it reads the latest state
	}
}
