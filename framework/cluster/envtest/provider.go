// Package envtest is the Provider that needs no Docker: a real kube-apiserver and etcd (controller-runtime
// envtest), kube-controller-manager for namespace deletion and garbage collection, the real olm-operator
// as a child process, and a local runtime that runs operators' Deployments in-process.
package envtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/process"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// Provider is a running envtest cluster. Create it with New; Stop it when done.
type Provider struct {
	opts       options
	workDir    string
	kubeconfig string
	env        *crenvtest.Environment
	cfg        *rest.Config
	kcm        *process.Process
	olm        *process.Process
	olmv1      *olmv1Running
	runtime    *localruntime.Runtime
	// connected: another process started the cluster and runs its processes (Connect).
	connected bool

	stopOnce sync.Once
	stopErr  error
}

// New starts a provider and returns once it is usable: control plane up, garbage collector working,
// OLM reconciling (unless WithoutOLM) and the local runtime watching Deployments. On error, everything
// started so far is stopped.
func New(ctx context.Context, opts ...Option) (_ *Provider, err error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	start := time.Now()
	if reaped, err := process.ReapStale(o.workRoot); err != nil {
		o.log.Info("could not reap stale work dirs", "error", err.Error())
	} else if len(reaped) > 0 {
		o.log.Info("reaped work dirs of runs that died", "dirs", reaped)
	}
	p := &Provider{opts: o}
	if p.workDir, err = process.NewWorkDir(o.workRoot, o.name); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = p.Stop(context.Background())
			err = callersDeadline(ctx, err, start)
		}
	}()
	if o.olmv1 {
		paths, err := olmv1.CRDPaths()
		if err != nil {
			return nil, err
		}
		p.opts.crdPaths = append(slices.Clone(p.opts.crdPaths), paths...)
	}
	if err := p.startControlPlane(ctx); err != nil {
		return nil, err
	}
	c, err := p.client()
	if err != nil {
		return nil, err
	}
	// kube-controller-manager and olm-operator each need only the API server: started side by side,
	// their waits overlap (≈ 1.5 s of every provider start).
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return p.step("kube-controller-manager", func() error { return p.startKCM(gctx, c) }) })
	if o.olm {
		g.Go(func() error {
			return p.step("olm-operator "+toolchain.OLMVersion, func() error { return p.startOLM(gctx, c) })
		})
	}
	if o.olmv1 {
		g.Go(func() error {
			return p.step("OLM v1 "+olmv1.Version+" (operator-controller, catalogd)", func() error { return p.startOLMv1(gctx, c) })
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	p.runtime = localruntime.New(p.cfg, o.registry, p.operatorLogDir(),
		localruntime.WithLogger(o.log.WithName("local-runtime")), localruntime.WithWorkDir(filepath.Join(p.workDir, "runtime")))
	if err := p.step("local operator runtime", func() error { return p.runtime.Start(context.WithoutCancel(ctx)) }); err != nil {
		return nil, err
	}
	o.log.Info("provider ready", "name", o.name, "workDir", p.workDir, "took", time.Since(start).Round(time.Millisecond).String())
	return p, nil
}

// callersDeadline names the caller's context when its end is what failed the start: a step's own
// timeouts say which wait ran out, a bare "context deadline exceeded" does not say whose.
func callersDeadline(ctx context.Context, err error, start time.Time) error {
	if ctx.Err() == nil {
		return err
	}
	whose := "ended"
	if deadline, ok := ctx.Deadline(); ok {
		whose = fmt.Sprintf("reached its deadline, %s after the start began", deadline.Sub(start).Round(time.Second))
	}
	return fmt.Errorf("%w — the context passed to New %s: give the caller longer (a start's own waits are in package intervals, scaled by %s) or find the slow step in the log above",
		err, whose, envvar.WaitScale.Name)
}

func (p *Provider) step(what string, fn func() error) error {
	start := time.Now()
	p.opts.log.Info("starting " + what)
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	p.opts.log.Info("started "+what, "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// startControlPlane starts etcd and kube-apiserver, retrying on another set of ports when one was
// taken between envtest choosing it and the server binding it (the process exits at once), and without
// the seed on the last attempt. A start that used its whole timeout is not tried again: on a starved
// machine a new start begins from nothing and loads everyone else (toolchain.StartEnvtest).
func (p *Provider) startControlPlane(ctx context.Context) error {
	assets, err := toolchain.EnvtestAssets()
	if err != nil {
		return err
	}
	// The seed holds what every provider of this kind installs (seed.go); the caller's own CRDs
	// (WithCRDs) are installed at the start, as before.
	var seeded []*apiextensionsv1.CustomResourceDefinition
	if p.opts.olm {
		if seeded, err = olm.CRDs(); err != nil {
			return err
		}
	}
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		err := p.step(fmt.Sprintf("etcd + kube-apiserver %s (attempt %d)", toolchain.KubeVersion, attempt), func() error {
			return p.tryControlPlane(assets, seeded, attempt)
		})
		if err == nil {
			return nil
		}
		lastErr = fmt.Errorf("%w (logs: %s)", err, filepath.Join(p.workDir, "logs"))
		if errors.Is(err, toolchain.ErrOutOfTime) || ctx.Err() != nil {
			break
		}
		p.opts.log.Info("control plane did not start; retrying on new ports", "error", err.Error())
	}
	return lastErr
}

func (p *Provider) tryControlPlane(assets string, seeded []*apiextensionsv1.CustomResourceDefinition, attempt int) error {
	dir := filepath.Join(p.workDir, fmt.Sprintf("controlplane-%d", attempt))
	logs := filepath.Join(p.workDir, "logs")
	for _, d := range []string{logs, filepath.Join(dir, "etcd"), filepath.Join(dir, "apiserver")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// The last attempt starts from an empty data dir, in case the seed is what keeps etcd or the API
	// server from starting. A seed holds its CRDs as envtest installs them, so those are installed
	// only without it, and otherwise waited for: envtest would read each and write it back unchanged
	// (OLM's eight: ≈ 0.55 s of CPU a start, the API server validating the large CSV schema).
	fromSeed := attempt < 3 && seedInto(filepath.Join(dir, "etcd"), p.workDir, assets, seeded, p.opts.log)
	crds := p.opts.crds
	if !fromSeed {
		crds = append(slices.Clone(crds), seeded...) // not into the options' array: each attempt starts over
	}
	apiLog, err := os.Create(filepath.Join(logs, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	etcdLog, err := os.Create(filepath.Join(logs, "etcd.log"))
	if err != nil {
		return err
	}
	env := &crenvtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDs:                  crds,
		CRDDirectoryPaths:     p.opts.crdPaths,
		ErrorIfCRDPathMissing: true,
	}
	env.ControlPlane.Etcd = &crenvtest.Etcd{DataDir: filepath.Join(dir, "etcd"), Out: etcdLog, Err: etcdLog}
	env.ControlPlane.APIServer = &crenvtest.APIServer{CertDir: filepath.Join(dir, "apiserver"), Out: apiLog, Err: apiLog}
	if err := p.audit(env.ControlPlane.APIServer); err != nil {
		return err
	}
	if p.opts.ports != nil {
		if port := p.opts.ports(attempt); port != 0 {
			env.ControlPlane.APIServer.SecureServing.Address = "127.0.0.1"
			env.ControlPlane.APIServer.SecureServing.Port = strconv.Itoa(port)
		}
	}
	cfg, err := toolchain.StartEnvtest(env, toolchain.WithStartLog(p.opts.log))
	if err == nil && fromSeed && len(seeded) > 0 {
		err = servedFromSeed(cfg, seeded, env.CRDInstallOptions.MaxTime)
		if err != nil {
			err = errors.Join(err, env.Stop())
		}
	}
	if err != nil {
		_ = process.KillReferencing(dir)
		return err
	}
	p.env, p.cfg = env, cfg
	return p.writeKubeconfig()
}

// writeKubeconfig writes an admin kubeconfig for the child processes and for users poking at the cluster.
func (p *Provider) writeKubeconfig() error {
	p.kubeconfig = filepath.Join(p.workDir, "kubeconfig")
	return clientcmd.WriteToFile(*kube.KubeconfigFromREST(p.cfg), p.kubeconfig)
}

func (p *Provider) startKCM(ctx context.Context, c client.Client) error {
	kcm, err := startControllerManager(p.workDir, p.kubeconfig)
	if err != nil {
		return err
	}
	p.kcm = kcm
	return garbageCollecting(ctx, c, kcm)
}

func (p *Provider) startOLM(ctx context.Context, c client.Client) error {
	proc, err := startOLM(ctx, c, p.workDir, p.kubeconfig)
	if err != nil {
		return err
	}
	p.olm = proc
	return waitOLM(ctx, c, proc, p.opts)
}

// StopOLM stops olm-operator, as a crash or an OLM upgrade would: CSVs and OperatorGroups then change
// with nobody reconciling them. StartOLM brings it back.
func (p *Provider) StopOLM(_ context.Context) error {
	if p.connected {
		return p.ownedElsewhere("stop olm-operator")
	}
	if p.olm == nil {
		return errors.New("olm-operator is not running (provider started WithoutOLM, or already stopped)")
	}
	err := p.olm.Stop(process.Grace)
	p.olm = nil
	return err
}

// StartOLM starts olm-operator again after StopOLM and waits until it reconciles (olm.Reconciling).
func (p *Provider) StartOLM(ctx context.Context) error {
	if p.connected {
		return p.ownedElsewhere("start olm-operator")
	}
	if p.olm != nil {
		return errors.New("olm-operator is already running")
	}
	c, err := p.client()
	if err != nil {
		return err
	}
	return p.step("olm-operator "+toolchain.OLMVersion+" (restart)", func() error { return p.startOLM(ctx, c) })
}

func (p *Provider) client() (client.Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, operatorsv1.AddToScheme, operatorsv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return client.New(p.cfg, client.Options{Scheme: scheme})
}

// Name implements cluster.Provider.
func (p *Provider) Name() string { return p.opts.name }

// Kind implements cluster.Provider.
func (p *Provider) Kind() string { return "envtest" }

// MayHoldForeignObjects implements cluster.ForeignObjects: the provider started the control plane for
// its runs, so everything on it is theirs.
func (p *Provider) MayHoldForeignObjects() bool { return false }

// RESTConfig implements cluster.Provider.
func (p *Provider) RESTConfig() *rest.Config { return p.cfg }

// KubeconfigPath implements cluster.Provider.
func (p *Provider) KubeconfigPath() string { return p.kubeconfig }

// WorkDir is the provider's private directory (kubeconfig, logs, etcd data). Removed by Stop.
func (p *Provider) WorkDir() string { return p.workDir }

// Runtime is the local runtime running operators' Deployments (nil for a provider made by Connect: it
// runs in the process that started the cluster).
func (p *Provider) Runtime() *localruntime.Runtime { return p.runtime }

// operatorLogDir is the local runtime's log dir: in the work dir, so a provider made by Connect reads it too.
func (p *Provider) operatorLogDir() string { return filepath.Join(p.workDir, "logs", "operators") }

// WorkloadLog is everything the local runtime's operator for Deployment namespace/name wrote, also
// once the Deployment is gone (cluster.WorkloadLogs).
func (p *Provider) WorkloadLog(namespace, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(p.operatorLogDir(), localruntime.LogFile(types.NamespacedName{Namespace: namespace, Name: name})))
	return string(b), err
}

// Registry is the set of images the local runtime can run; register more before installing operators
// (only in the process that started the cluster: a provider made by Connect runs nothing).
func (p *Provider) Registry() *localruntime.Registry { return p.opts.registry }

// What the envtest provider is and cannot do, checked by the compiler.
var (
	_ cluster.Provider       = (*Provider)(nil)
	_ cluster.OLMStopper     = (*Provider)(nil)
	_ cluster.Disposable     = (*Provider)(nil)
	_ cluster.WebhookLimited = (*Provider)(nil)
	_ cluster.WorkloadLogs   = (*Provider)(nil)
	_ cluster.AuditLogs      = (*Provider)(nil)
)

// WebhooksUnsupported implements cluster.WebhookLimited: operators run on this machine (in the test
// process or as child processes), with no cluster network, and OLM's webhook configurations point the
// API server at a Service that no endpoint of theirs backs.
func (p *Provider) WebhooksUnsupported() string {
	return "it runs operators on this machine (in the test process, or their binaries as child processes) without " +
		"pods or a cluster network, so nothing routes the API server's webhook calls to the Service OLM's webhook " +
		"configurations name"
}

// DeletesClusterOnStop implements cluster.Disposable: the control plane goes with the provider.
func (p *Provider) DeletesClusterOnStop() bool { return true }

// Stop stops the operators, OLM, kube-controller-manager and the control plane, kills anything left
// that references the work dir, and removes it; a provider made by Connect only disconnects (the
// process that started the cluster stops it). Idempotent.
func (p *Provider) Stop(ctx context.Context) error {
	if p.connected {
		return nil
	}
	p.stopOnce.Do(func() {
		start := time.Now()
		var errs []error
		if p.runtime != nil {
			errs = append(errs, p.runtime.Stop())
		}
		errs = append(errs, p.olmv1.stop())
		for _, proc := range []*process.Process{p.olm, p.kcm} {
			if proc != nil {
				errs = append(errs, proc.Stop(process.Grace))
			}
		}
		if p.env != nil {
			errs = append(errs, p.env.Stop())
		}
		if p.workDir != "" {
			errs = append(errs, process.KillReferencing(p.workDir))
			errs = append(errs, os.RemoveAll(p.workDir))
		}
		p.stopErr = errors.Join(errs...)
		p.opts.log.Info("provider stopped", "name", p.opts.name, "took", time.Since(start).Round(time.Millisecond).String())
	})
	return p.stopErr
}

// CollectArtifacts implements cluster.Provider: the logs of every process the provider ran.
func (p *Provider) CollectArtifacts(_ context.Context, dir string) error {
	return copyTree(filepath.Join(p.workDir, "logs"), dir)
}
