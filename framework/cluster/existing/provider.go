// Package existing is the Provider for a cluster the user already has (KUBECONFIG, a context of it, or
// the in-cluster config). It creates no cluster and installs nothing: it connects, checks the cluster
// answers, and writes a kubeconfig of the chosen context for child processes. What the specs need on
// the cluster (OLM, the operand-cleanup controller, CRDs) is framework/stack's job, which detects it,
// installs only what is missing and removes exactly that at the end.
//
// Images: the controller the stack installs and the operators the specs install must be runnable by
// the cluster's nodes (cleanup-e2e.local/... tags are never pulled: load them, e.g. kind load
// docker-image, or mirror them). A node-less cluster (envtest) runs nothing by itself.
package existing

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

var _ cluster.Provider = (*Provider)(nil)

// Provider is an existing cluster the run connected to.
type Provider struct {
	opts       options
	cfg        *rest.Config
	c          client.Client
	workDir    string
	kubeconfig string
	context    string

	stopOnce sync.Once
	stopErr  error
}

// New connects to the cluster and checks that it answers.
func New(ctx context.Context, opts ...Option) (_ *Provider, err error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	start := time.Now()
	p := &Provider{opts: o}
	if err := p.connect(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = p.Stop(context.WithoutCancel(ctx))
		}
	}()
	if err := p.checkReachable(); err != nil {
		return nil, err
	}
	o.log.Info("provider ready", "name", o.name, "context", p.context, "server", p.cfg.Host,
		"took", time.Since(start).Round(time.Millisecond).String())
	return p, nil
}

// connect loads the kubeconfig (or the in-cluster config) and writes a minimal kubeconfig with the
// chosen context for child processes.
func (p *Provider) connect() error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if p.opts.kubeconfig != "" {
		rules.ExplicitPath = p.opts.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: p.opts.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return fmt.Errorf("CLEANUP_E2E_PROVIDER=existing needs a cluster: no usable kubeconfig (KUBECONFIG=%q, context %q): %w",
			os.Getenv("KUBECONFIG"), p.opts.context, err)
	}
	p.cfg = cfg
	raw, err := cc.RawConfig()
	if err != nil {
		return err
	}
	if p.opts.context != "" {
		raw.CurrentContext = p.opts.context
	}
	p.context = raw.CurrentContext
	if err := os.MkdirAll(p.opts.workRoot, 0o755); err != nil {
		return err
	}
	if p.workDir, err = os.MkdirTemp(p.opts.workRoot, "existing-"+p.opts.name+"-"); err != nil {
		return err
	}
	kc := kube.KubeconfigFromREST(cfg)
	if _, ok := raw.Contexts[raw.CurrentContext]; ok {
		if err := clientcmdapi.MinifyConfig(&raw); err != nil {
			return err
		}
		if err := clientcmdapi.FlattenConfig(&raw); err != nil {
			return err
		}
		kc = &raw
	}
	p.kubeconfig = filepath.Join(p.workDir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p.kubeconfig); err != nil {
		return err
	}
	p.c, err = kube.NewClient(cfg, kube.MustScheme())
	return err
}

func (p *Provider) checkReachable() error {
	dc, err := discovery.NewDiscoveryClientForConfig(p.cfg)
	if err != nil {
		return err
	}
	if _, err := dc.ServerVersion(); err != nil {
		return fmt.Errorf("cannot reach the cluster of context %q at %s: %w", p.context, p.cfg.Host, err)
	}
	return nil
}

// Name implements cluster.Provider.
func (p *Provider) Name() string { return p.opts.name }

// Kind implements cluster.Provider.
func (p *Provider) Kind() string { return "existing" }

// MayHoldForeignObjects implements cluster.ForeignObjects: the cluster is someone's own, handed over
// with KUBECONFIG.
func (p *Provider) MayHoldForeignObjects() bool { return true }

// RESTConfig implements cluster.Provider.
func (p *Provider) RESTConfig() *rest.Config { return p.cfg }

// KubeconfigPath implements cluster.Provider: the chosen context only, credentials embedded.
func (p *Provider) KubeconfigPath() string { return p.kubeconfig }

// Stop removes the provider's work dir. The cluster, and everything on it, is left as it is (what the
// run installed is framework/stack's to remove). Idempotent.
func (p *Provider) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() {
		if p.workDir != "" {
			p.stopErr = os.RemoveAll(p.workDir)
		}
	})
	return p.stopErr
}
