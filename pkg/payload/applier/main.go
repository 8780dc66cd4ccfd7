package applier

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// Name is the program name (user agent, logger name).
const Name = "payload-applier"

// Flags are the command-line settings of Main.
type Flags struct {
	PayloadDir       string
	PayloadConfigMap string
	Mode             Mode
	Interval         time.Duration
	Options          Options
	// Accepted for the local runtime (docs/CONTRACTS.md); the applier serves no endpoints.
	MetricsBindAddress     string
	HealthProbeBindAddress string
}

// ParseFlags parses args with its own FlagSet. getenv supplies POD_NAMESPACE as the default namespace.
func ParseFlags(args []string, getenv func(string) string) (*Flags, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	f := &Flags{}
	var mode string
	fs := flag.NewFlagSet(Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.PayloadDir, "payload", "", "payload directory (0000_<NN>_<component>_*.yaml manifests + release-metadata)")
	fs.StringVar(&f.PayloadConfigMap, "payload-configmap", "", "read the payload from this ConfigMap in --namespace instead (keys are file names)")
	fs.StringVar(&mode, "mode", string(ModeUpdate), "install, update or reconcile (later passes of an applied payload reconcile)")
	fs.DurationVar(&f.Interval, "interval", 0, "run a pass every interval until stopped (0: run one pass and exit with its result)")
	fs.StringVar(&f.Options.Namespace, "namespace", getenv("POD_NAMESPACE"), "the applier's namespace (state ConfigMap, relatedObjects)")
	fs.StringVar(&f.Options.ClusterOperatorName, "cluster-operator", DefaultClusterOperatorName, "name of the applier's own ClusterOperator")
	fs.BoolVar(&f.Options.DisableStatus, "disable-status", false, "do not maintain the applier's own ClusterOperator")
	fs.StringVar(&f.Options.StateConfigMapName, "state-configmap", "", "ConfigMap persisting delete progress (default <cluster-operator>-state)")
	fs.IntVar(&f.Options.MaxParallelism, "max-parallelism", DefaultMaxParallelism, "components of one run level applied at once")
	fs.DurationVar(&f.Options.ClusterOperatorTimeout, "cluster-operator-timeout", DefaultClusterOperatorTimeout, "how long to wait for a payload ClusterOperator to report its versions")
	fs.DurationVar(&f.Options.ClusterOperatorDegradedGrace, "cluster-operator-degraded-grace", DefaultClusterOperatorDegradedGrace, "how long an update waits on a degraded payload ClusterOperator before failing (the CVO's 40m)")
	fs.DurationVar(&f.Options.TaskRetryTimeout, "task-retry-timeout", DefaultTaskRetryTimeout, "in-pass retries of transient errors")
	fs.BoolVar(&f.Options.Force, "force", false, "start minor/major updates even while Upgradeable=False")
	fs.StringVar(&f.MetricsBindAddress, "metrics-bind-address", "0", "accepted for compatibility; nothing is served")
	fs.StringVar(&f.HealthProbeBindAddress, "health-probe-bind-address", "0", "accepted for compatibility; nothing is served")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%s: unexpected arguments %q", Name, fs.Args())
	}
	m, err := ParseMode(mode)
	if err != nil {
		return nil, err
	}
	f.Mode = m
	switch {
	case f.PayloadDir == "" && f.PayloadConfigMap == "":
		return nil, errors.New("one of --payload or --payload-configmap is required")
	case f.PayloadDir != "" && f.PayloadConfigMap != "":
		return nil, errors.New("--payload and --payload-configmap are exclusive")
	case f.PayloadConfigMap != "" && f.Options.Namespace == "":
		return nil, errors.New("--payload-configmap needs --namespace or POD_NAMESPACE")
	case f.Interval < 0:
		return nil, fmt.Errorf("--interval must not be negative, got %s", f.Interval)
	}
	return f, nil
}

// NewScheme has client-go's types and ClusterOperator.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = configv1.AddToScheme(s)
	return s
}

// Main applies the payload once (--interval 0: returns the pass's error) or every --interval until ctx
// is cancelled (docs/CONTRACTS.md). The first pass uses --mode (install becomes update when the
// persisted state shows an applied version); later passes reconcile a payload that was completely
// applied, and update when the payload content changes.
func Main(ctx context.Context, cfg *rest.Config, args []string, getenv func(string) string) error {
	f, err := ParseFlags(args, getenv)
	if err != nil {
		return err
	}
	logger := logr.FromContextOrDiscard(ctx).WithName(Name)
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = Name
	}
	c, err := client.New(cfg, client.Options{Scheme: NewScheme()})
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	f.Options.Logger = logger
	a := New(c, c.RESTMapper(), f.Options)
	load := func(ctx context.Context) (*payload.Payload, error) {
		if f.PayloadDir != "" {
			return payload.Load(f.PayloadDir)
		}
		return LoadConfigMap(ctx, c, f.Options.Namespace, f.PayloadConfigMap)
	}

	mode := f.Mode
	lastHash, lastCompleted := "", false
	pass := func() error {
		p, err := load(ctx)
		if err != nil {
			return err
		}
		if lastHash == "" && mode == ModeInstall {
			// Install is the first apply only: after a restart with applied state, update.
			if v, err := a.CurrentVersion(ctx); err != nil {
				return err
			} else if v != "" {
				mode = ModeUpdate
			}
		}
		if lastHash == "" && mode == ModeUpdate {
			// A restart on the payload it last applied completely reconciles, as the CVO does
			// (ClusterVersion's history says Completed): an update's deletes are for a new payload.
			if s, err := a.State(ctx); err != nil {
				return err
			} else if s.Hash == p.Hash && s.Target == "" {
				mode = ModeReconcile
			}
		}
		if lastHash != "" {
			switch {
			case p.Hash != lastHash:
				mode = ModeUpdate
				if v, _ := a.CurrentVersion(ctx); v == "" {
					mode = f.Mode
				}
			case lastCompleted:
				mode = ModeReconcile
			}
		}
		logger.Info("starting pass", "mode", mode, "version", p.Version, "manifests", len(p.Manifests))
		pctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		if f.Interval > 0 && mode != ModeInstall {
			// As the CVO: a new payload cancels the pass in flight, except during the first install,
			// whose target the CVO keeps (it ignores version changes while initializing).
			go func() {
				t := time.NewTicker(f.Interval)
				defer t.Stop()
				for {
					select {
					case <-pctx.Done():
						return
					case <-t.C:
					}
					if next, err := load(pctx); err == nil && next.Hash != p.Hash {
						logger.Info("a newer payload supersedes the pass in flight", "version", p.Version, "newVersion", next.Version)
						cancel(ErrSuperseded)
						return
					}
				}
			}()
		}
		res, err := a.Run(pctx, p, mode)
		lastHash, lastCompleted = p.Hash, res.Completed
		logger.Info("pass finished", "mode", mode, "version", p.Version, "completed", res.Completed,
			"deletesInProgress", res.DeletesInProgress, "superseded", errors.Is(err, ErrSuperseded))
		return err
	}

	if f.Interval == 0 {
		return pass()
	}
	t := time.NewTicker(f.Interval)
	defer t.Stop()
	for {
		err := pass()
		if errors.Is(err, ErrSuperseded) && ctx.Err() == nil {
			continue // the newer payload's pass starts now
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			logger.Error(err, "pass failed; retrying", "interval", f.Interval.String())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// LoadConfigMap loads a payload from a ConfigMap whose keys are file names (data and binaryData).
func LoadConfigMap(ctx context.Context, c client.Client, namespace, name string) (*payload.Payload, error) {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cm); err != nil {
		return nil, fmt.Errorf("payload configmap %s/%s: %w", namespace, name, err)
	}
	files := map[string][]byte{}
	for k, v := range cm.Data {
		files[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		files[k] = v
	}
	p, err := payload.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("payload configmap %s/%s: %w", namespace, name, err)
	}
	return p, nil
}
