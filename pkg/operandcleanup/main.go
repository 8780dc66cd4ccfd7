package operandcleanup

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// DefaultLeaderElectionID is the leader-election Lease's name unless --leader-election-id says otherwise.
const DefaultLeaderElectionID = "operand-cleanup.operatorframework.io"

// Flags are the command-line settings of Main.
type Flags struct {
	MetricsBindAddress     string
	HealthProbeBindAddress string
	LeaderElect            bool
	LeaderElectionID       string
	LeaderElectionNS       string
	KubeAPIQPS             float64
	KubeAPIBurst           int
	Options                Options
}

// ParseFlags parses args with a fresh FlagSet (never the global one). getenv supplies POD_NAMESPACE as
// the default leader-election namespace.
func ParseFlags(args []string, getenv func(string) string) (*Flags, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	f := &Flags{}
	fs := flag.NewFlagSet(ControllerName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.MetricsBindAddress, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint ("0" disables it)`)
	fs.StringVar(&f.HealthProbeBindAddress, "health-probe-bind-address", ":8081", `address of /healthz and /readyz ("0" disables them)`)
	fs.BoolVar(&f.LeaderElect, "leader-elect", false, "use leader election (needed when running more than one replica)")
	fs.StringVar(&f.LeaderElectionID, "leader-election-id", DefaultLeaderElectionID, "name of the leader-election Lease")
	fs.StringVar(&f.LeaderElectionNS, "leader-election-namespace", getenv("POD_NAMESPACE"), "namespace of the leader-election Lease")
	fs.Float64Var(&f.KubeAPIQPS, "kube-api-qps", 50, "client-side QPS limit towards the API server (<0: none)")
	fs.IntVar(&f.KubeAPIBurst, "kube-api-burst", 100, "client-side burst towards the API server")
	fs.IntVar(&f.Options.MaxPendingListed, "max-pending-listed", DefaultMaxPendingListed, "most CR instances listed in status.cleanup.pendingDeletion (the message carries the total)")
	fs.DurationVar(&f.Options.StallTimeout, "stall-timeout", DefaultStallTimeout, "time without progress before a CleanupStalled warning event (per-CSV override: annotation "+StallTimeoutAnnotation+")")
	fs.IntVar(&f.Options.DeleteConcurrency, "delete-concurrency", DefaultDeleteConcurrency, "most operand Delete calls in flight")
	fs.DurationVar(&f.Options.ResyncInterval, "resync-interval", DefaultResyncInterval, "backstop requeue of a CSV whose cleanup is pending")
	fs.DurationVar(&f.Options.StatusUpdateInterval, "status-update-interval", DefaultStatusUpdateInterval, "minimum time between two status writes of a CSV under cleanup")
	// Accepted so that existing deployments keep starting: operands are listed live, there is no informer to wait for.
	fs.Duration("informer-sync-timeout", 0, "deprecated and ignored (operands are no longer cached)")
	fs.IntVar(&f.Options.ListPageSize, "list-page-size", DefaultListPageSize, "operands per list call of a cleanup pass")
	fs.DurationVar(&f.Options.OperatorCheckInterval, "operator-check-interval", DefaultOperatorCheckInterval, "how often a pending cleanup reads whether its operator still runs (OperatorGone is reported within twice this)")
	fs.IntVar(&f.Options.MaxConcurrentReconciles, "max-concurrent-reconciles", DefaultMaxConcurrentReconciles, "CSVs reconciled in parallel")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			var usage strings.Builder
			fs.SetOutput(&usage)
			fs.PrintDefaults()
			return nil, fmt.Errorf("usage of %s:\n%s%w", ControllerName, usage.String(), err)
		}
		return nil, fmt.Errorf("%s: %w", ControllerName, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%s: unexpected arguments %q", ControllerName, fs.Args())
	}
	if f.LeaderElect && f.LeaderElectionNS == "" {
		return nil, errors.New("--leader-elect needs --leader-election-namespace or POD_NAMESPACE")
	}
	for name, v := range map[string]int{"max-pending-listed": f.Options.MaxPendingListed, "delete-concurrency": f.Options.DeleteConcurrency, "max-concurrent-reconciles": f.Options.MaxConcurrentReconciles, "list-page-size": f.Options.ListPageSize} {
		if v <= 0 {
			return nil, fmt.Errorf("--%s must be positive, got %d", name, v)
		}
	}
	for name, v := range map[string]time.Duration{"stall-timeout": f.Options.StallTimeout, "resync-interval": f.Options.ResyncInterval, "operator-check-interval": f.Options.OperatorCheckInterval} {
		if v <= 0 {
			return nil, fmt.Errorf("--%s must be positive, got %s", name, v)
		}
	}
	return f, nil
}

// Main runs the controller until ctx is cancelled (docs/CONTRACTS.md). It may run several times in one
// process: it uses its own FlagSet, the logger from ctx, and registers metrics once.
func Main(ctx context.Context, cfg *rest.Config, args []string, getenv func(string) string) error {
	f, err := ParseFlags(args, getenv)
	if err != nil {
		return err
	}
	if cfg == nil {
		return errors.New("no Kubernetes client configuration (kubeconfig or in-cluster)")
	}
	logger := logr.FromContextOrDiscard(ctx).WithName(ControllerName)
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(f.KubeAPIQPS), f.KubeAPIBurst
	if cfg.UserAgent == "" {
		cfg.UserAgent = ControllerName
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        NewScheme(),
		Logger:                        logger,
		Cache:                         CacheOptions(),
		Metrics:                       metricsserver.Options{BindAddress: f.MetricsBindAddress},
		HealthProbeBindAddress:        f.HealthProbeBindAddress,
		LeaderElection:                f.LeaderElect,
		LeaderElectionID:              f.LeaderElectionID,
		LeaderElectionNamespace:       f.LeaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := New(mgr, f.Options).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up controller: %w", err)
	}
	// OLM v1's ordered uninstall (pkg/extensioncleanup), once the ClusterExtension API is served. Until
	// then an opted-in ClusterExtension has no finalizer, and deleting it is OLM v1's plain uninstall:
	// looked for every 5 s (one discovery request), so that OLM v1 installed next is served promptly.
	if err := extensioncleanup.AddWhenServed(mgr, extensioncleanup.Options{}, 5*time.Second); err != nil {
		return fmt.Errorf("setting up the OLM v1 ordered-uninstall controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("cache", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("cache not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	logger.Info("starting", "stallTimeout", f.Options.StallTimeout, "deleteConcurrency", f.Options.DeleteConcurrency,
		"maxPendingListed", f.Options.MaxPendingListed, "resyncInterval", f.Options.ResyncInterval, "leaderElect", f.LeaderElect)
	return mgr.Start(ctx)
}
