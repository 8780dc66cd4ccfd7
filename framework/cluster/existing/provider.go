// Package existing is the Provider for a cluster the user already has (KUBECONFIG, a context of it, or
// the in-cluster config). It creates no cluster: it checks what the specs need and installs only what
// is missing — the operand-cleanup controller, and on request the ClusterOperator CRD — recording what
// it created, and Stop removes exactly that (never an object the run did not create: deletes carry a
// UID precondition).
//
// OLM itself is required, not installed: installing OLM needs its images, which only the cluster can
// pull, so New fails with a message saying how to install it.
//
// Images: the controller it installs and the operators the specs install must be runnable by the
// cluster's nodes (cleanup-e2e.local/... tags are never pulled: load them, e.g. kind load
// docker-image, or mirror them). A node-less cluster (envtest) runs nothing by itself.
package existing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crdconfig "github.com/cleanup-e2e/cleanup-e2e/config/crd"
	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

var _ cluster.Provider = (*Provider)(nil)

// Detected is what New found on the cluster before installing anything.
type Detected struct {
	// Context and Server identify the cluster ("" context for the in-cluster config).
	Context, Server string
	// OLM is true when OLM's CRDs are there and an olm-operator reconciles.
	OLM bool
	// OLMNamespaces are where olm-operator / catalog-operator Deployments were seen (when listable).
	OLMNamespaces []string
	// OperandCleanup is true when the operand-cleanup controller's Deployment was already there.
	OperandCleanup bool
	// ClusterOperatorCRD is true when the ClusterOperator CRD was already there.
	ClusterOperatorCRD bool
}

// Provider is an existing cluster plus what this run added to it.
type Provider struct {
	opts       options
	cfg        *rest.Config
	c          client.Client
	workDir    string
	kubeconfig string
	detected   Detected

	mu      sync.Mutex
	created []createdObject
	// preexisting: which RunLeftovers objects ("crd/<name>", "ns/<name>") existed before the run.
	preexisting map[string]bool

	stopOnce sync.Once
	stopErr  error
}

// createdObject is an object this run created; Stop deletes it only if its UID still matches.
type createdObject struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	uid       types.UID
}

func (o createdObject) String() string {
	if o.namespace == "" {
		return o.gvk.Kind + " " + o.name
	}
	return o.gvk.Kind + " " + o.namespace + "/" + o.name
}

// New connects to the cluster, checks OLM, and installs what is missing. On error, what it created so
// far is removed.
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
	if !o.waitOnly {
		if err := p.snapshotRunLeftovers(ctx); err != nil {
			return nil, err
		}
	}
	if o.olm {
		if err := p.step("checking OLM", func() error { return p.ensureOLM(ctx) }); err != nil {
			return nil, err
		}
	}
	if err := p.step("ClusterOperator CRD", func() error { return p.ensureClusterOperatorCRD(ctx) }); err != nil {
		return nil, err
	}
	if o.operandCleanup {
		if err := p.step("operand-cleanup controller", func() error { return p.ensureOperandCleanup(ctx) }); err != nil {
			return nil, err
		}
	}
	o.log.Info("provider ready", "name", o.name, "context", p.detected.Context, "server", p.detected.Server,
		"created", p.Created(), "took", time.Since(start).Round(time.Millisecond).String())
	return p, nil
}

func (p *Provider) step(what string, fn func() error) error {
	start := time.Now()
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	p.opts.log.Info("done: "+what, "took", time.Since(start).Round(time.Millisecond).String())
	return nil
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
	p.detected.Context, p.detected.Server = raw.CurrentContext, cfg.Host
	if err := os.MkdirAll(p.opts.workRoot, 0o755); err != nil {
		return err
	}
	if p.workDir, err = os.MkdirTemp(p.opts.workRoot, "existing-"+p.opts.name+"-"); err != nil {
		return err
	}
	kc := kubeconfigFromREST(cfg)
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

// kubeconfigFromREST renders a rest.Config (the in-cluster one) as a kubeconfig.
func kubeconfigFromREST(cfg *rest.Config) *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	cl := clientcmdapi.NewCluster()
	cl.Server, cl.CertificateAuthority, cl.CertificateAuthorityData = cfg.Host, cfg.CAFile, cfg.CAData
	cl.InsecureSkipTLSVerify = cfg.Insecure
	user := clientcmdapi.NewAuthInfo()
	user.Token, user.TokenFile = cfg.BearerToken, cfg.BearerTokenFile
	user.ClientCertificate, user.ClientCertificateData = cfg.CertFile, cfg.CertData
	user.ClientKey, user.ClientKeyData = cfg.KeyFile, cfg.KeyData
	kc.Clusters["cluster"], kc.AuthInfos["user"] = cl, user
	ctx := clientcmdapi.NewContext()
	ctx.Cluster, ctx.AuthInfo = "cluster", "user"
	kc.Contexts["cluster"], kc.CurrentContext = ctx, "cluster"
	return kc
}

func (p *Provider) checkReachable() error {
	dc, err := discovery.NewDiscoveryClientForConfig(p.cfg)
	if err != nil {
		return err
	}
	if _, err := dc.ServerVersion(); err != nil {
		return fmt.Errorf("cannot reach the cluster of context %q at %s: %w", p.detected.Context, p.cfg.Host, err)
	}
	return nil
}

// requiredOLMCRDs are what the framework drives; the other OLM CRDs are optional here.
var requiredOLMCRDs = []string{"clusterserviceversions.operators.coreos.com", "operatorgroups.operators.coreos.com"}

// errNoOLM explains why the provider stops here.
const errNoOLM = "OLM is not installed on this cluster (missing CRDs: %s). The existing provider does not " +
	"install OLM: that needs OLM's images, which only the cluster can pull. Install OLM %s first (e.g. " +
	"`operator-sdk olm install --version %s`, or apply crds.yaml and olm.yaml of that OLM release), or " +
	"use CLEANUP_E2E_PROVIDER=envtest or CLEANUP_E2E_PROVIDER=kind (make e2e PROVIDER=...), which bring their own"

// ensureOLM checks OLM's CRDs and that an olm-operator reconciles (olm.Reconciling, whose probe
// namespace the run removes on Stop when it created it).
func (p *Provider) ensureOLM(ctx context.Context) error {
	missing, err := missingCRDs(ctx, p.c, requiredOLMCRDs...)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf(errNoOLM, strings.Join(missing, ", "), toolchain.OLMVersion, toolchain.OLMVersion)
	}
	p.detected.OLMNamespaces = p.olmNamespaces(ctx)
	if p.opts.waitOnly {
		if err := p.waitProbeReconciled(ctx); err != nil {
			return err
		}
	} else {
		probeNS := &unstructured.Unstructured{}
		probeNS.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
		existed, err := exists(ctx, p.c, probeNS, "", olm.ProbeNamespace)
		if err != nil {
			return err
		}
		err = olm.WaitReconciling(ctx, p.c, p.opts.readyTimeout)
		if !existed {
			p.recordExisting(ctx, probeNS.GroupVersionKind(), "", olm.ProbeNamespace)
		}
		if err != nil {
			return fmt.Errorf("OLM's CRDs are installed but no olm-operator reconciles (olm-operator Deployments seen in %v): %w",
				p.detected.OLMNamespaces, err)
		}
	}
	p.detected.OLM = true
	return nil
}

func (p *Provider) waitProbeReconciled(ctx context.Context) error {
	return kube.Poll(ctx, p.opts.readyTimeout, func() (bool, string) {
		og := &unstructured.Unstructured{}
		og.SetGroupVersionKind(schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1", Kind: "OperatorGroup"})
		if err := p.c.Get(ctx, types.NamespacedName{Namespace: olm.ProbeNamespace, Name: "probe"}, og); err != nil {
			return false, "waiting for the primary process's OLM probe: " + err.Error()
		}
		last, _, _ := unstructured.NestedString(og.Object, "status", "lastUpdated")
		return last != "", "the OLM probe OperatorGroup has no status yet"
	})
}

// olmNamespaces lists the namespaces of olm-operator / catalog-operator Deployments (nil when the
// user may not list Deployments cluster-wide).
func (p *Provider) olmNamespaces(ctx context.Context) []string {
	seen := map[string]bool{}
	var out []string
	for _, name := range []string{"olm-operator", "catalog-operator"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DeploymentList"})
		if err := p.c.List(ctx, list, client.MatchingFields{"metadata.name": name}); err != nil {
			continue
		}
		for _, d := range list.Items {
			if !seen[d.GetNamespace()] {
				seen[d.GetNamespace()] = true
				out = append(out, d.GetNamespace())
			}
		}
	}
	return out
}

func (p *Provider) ensureClusterOperatorCRD(ctx context.Context) error {
	crd, err := crdconfig.ClusterOperator()
	if err != nil {
		return err
	}
	missing, err := missingCRDs(ctx, p.c, crd.Name)
	if err != nil {
		return err
	}
	p.detected.ClusterOperatorCRD = len(missing) == 0
	switch {
	case len(missing) == 0:
		p.opts.log.Info("found the ClusterOperator CRD; leaving it alone", "crd", crd.Name)
		return nil
	case !p.opts.clusterOperator:
		return nil // only detected
	case p.opts.waitOnly:
		if err := kube.Poll(ctx, p.opts.readyTimeout, func() (bool, string) {
			m, err := missingCRDs(ctx, p.c, crd.Name)
			return err == nil && len(m) == 0, fmt.Sprintf("waiting for another process to install CRD %s", crd.Name)
		}); err != nil {
			return err
		}
		// Existing is not usable yet: this process's specs create ClusterOperators right after.
		return kube.WaitCRDsUsable(ctx, p.c, crd.Name)
	}
	if p.detected.OLM {
		p.opts.log.Info("installing config.openshift.io's ClusterOperator CRD next to OLM: a restarted olm-operator " +
			"would take the cluster for OpenShift and wait for its Proxy API until the CRD is removed (Stop)")
	}
	if err := p.c.Create(ctx, crd); err != nil {
		return fmt.Errorf("create CRD %s: %w", crd.Name, err)
	}
	p.record(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), "", crd.Name, crd.UID)
	p.opts.log.Info("installed the ClusterOperator CRD", "crd", crd.Name)
	return kube.ApplyCRDs(ctx, p.c, crd) // waits until p.c can use it
}

// ensureOperandCleanup reuses a controller that is there (waiting for it to be available, never
// changing it) or installs the missing pieces of config/operand-cleanup.
func (p *Provider) ensureOperandCleanup(ctx context.Context) error {
	objs, err := operandcleanupconfig.Objects()
	if err != nil {
		return err
	}
	var missing []*unstructured.Unstructured
	for _, o := range objs {
		ok, err := exists(ctx, p.c, o.DeepCopy(), o.GetNamespace(), o.GetName())
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, o)
		}
	}
	depKey := types.NamespacedName{Namespace: operandcleanupconfig.Namespace, Name: operandcleanupconfig.Deployment}
	depMissing := false
	for _, o := range missing {
		depMissing = depMissing || (o.GetKind() == "Deployment" && o.GetName() == depKey.Name)
	}
	p.detected.OperandCleanup = !depMissing
	switch {
	case len(missing) == 0:
		p.opts.log.Info("found the operand-cleanup controller; leaving it alone", "deployment", depKey.String())
	case p.opts.waitOnly:
		p.opts.log.Info("waiting for another process to install the operand-cleanup controller")
	case len(missing) == len(objs):
		err := components.InstallOperandCleanup(ctx, components.InstallOperandCleanupInput{Client: p.c,
			Args: p.opts.cleanupArgs, Timeout: p.opts.readyTimeout})
		for _, o := range objs {
			p.recordExisting(ctx, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
		}
		if err != nil {
			return fmt.Errorf("%w (%s)", err, imageHint)
		}
		p.opts.log.Info("installed the operand-cleanup controller", "deployment", depKey.String())
		return nil
	default:
		for _, o := range missing {
			if err := kube.Apply(ctx, p.c, o); err != nil {
				return err
			}
			p.recordExisting(ctx, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
		}
		p.opts.log.Info("installed the missing pieces of the operand-cleanup controller", "created", p.Created())
	}
	if err := kube.WaitDeploymentAvailable(ctx, p.c, depKey, p.opts.readyTimeout); err != nil {
		if p.detected.OperandCleanup {
			return fmt.Errorf("the operand-cleanup controller found on the cluster (not created by this run, so left as it is) is not available: %w", err)
		}
		return fmt.Errorf("%w (%s)", err, imageHint)
	}
	return nil
}

const imageHint = "its image " + operandcleanupconfig.Image + " must be runnable by the cluster's nodes: load it " +
	"(kind load docker-image) or mirror it; a node-less cluster (envtest) runs no pods by itself"

// record notes an object the run created.
func (p *Provider) record(gvk schema.GroupVersionKind, ns, name string, uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.created = append(p.created, createdObject{gvk: gvk, namespace: ns, name: name, uid: uid})
}

// recordExisting records an object the run just created, reading its UID.
func (p *Provider) recordExisting(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := p.c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		return
	}
	p.record(gvk, ns, name, u.GetUID())
}

// Created lists what this run created ("Kind namespace/name"), in creation order. Stop removes them.
func (p *Provider) Created() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.created))
	for i, o := range p.created {
		out[i] = o.String()
	}
	return out
}

// Detected is what New found before installing anything.
func (p *Provider) Detected() Detected { return p.detected }

// Name implements cluster.Provider.
func (p *Provider) Name() string { return p.opts.name }

// Kind implements cluster.Provider.
func (p *Provider) Kind() string { return "existing" }

// RESTConfig implements cluster.Provider.
func (p *Provider) RESTConfig() *rest.Config { return p.cfg }

// KubeconfigPath implements cluster.Provider: the chosen context only, credentials embedded.
func (p *Provider) KubeconfigPath() string { return p.kubeconfig }

// Stop deletes what the run created, newest first, and only while it is the same object (same UID),
// waits for it to be gone, and removes the provider's work dir. The cluster itself is left running.
// Idempotent.
func (p *Provider) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() {
		var errs []error
		if p.c != nil {
			errs = append(errs, p.removeRunLeftovers(ctx))
		}
		p.mu.Lock()
		created := append([]createdObject{}, p.created...)
		p.mu.Unlock()
		for i := len(created) - 1; i >= 0; i-- {
			errs = append(errs, p.remove(ctx, created[i]))
		}
		for _, o := range created {
			errs = append(errs, p.waitGone(ctx, o))
		}
		if p.workDir != "" {
			errs = append(errs, os.RemoveAll(p.workDir))
		}
		p.stopErr = errors.Join(errs...)
		if len(created) > 0 {
			p.opts.log.Info("removed what the run created", "objects", p.Created(), "error", p.stopErr)
		}
	})
	return p.stopErr
}

func (p *Provider) remove(ctx context.Context, o createdObject) error {
	if p.c == nil {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.gvk)
	u.SetNamespace(o.namespace)
	u.SetName(o.name)
	err := p.c.Delete(ctx, u, client.Preconditions{UID: &o.uid}, client.PropagationPolicy("Background"))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) { // gone, or someone else's by now
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", o, err)
	}
	return nil
}

func (p *Provider) waitGone(ctx context.Context, o createdObject) error {
	if p.c == nil {
		return nil
	}
	return kube.Poll(ctx, p.opts.readyTimeout, func() (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.gvk)
		err := p.c.Get(ctx, types.NamespacedName{Namespace: o.namespace, Name: o.name}, u)
		if apierrors.IsNotFound(err) || (err == nil && u.GetUID() != o.uid) {
			return true, ""
		}
		return false, fmt.Sprintf("%s is not gone yet (error %v)", o, err)
	})
}

// missingCRDs returns the names of the CRDs that do not exist.
func missingCRDs(ctx context.Context, c client.Client, names ...string) ([]string, error) {
	var missing []string
	for _, n := range names {
		err := c.Get(ctx, types.NamespacedName{Name: n}, &apiextensionsv1.CustomResourceDefinition{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, n)
		case err != nil:
			return nil, fmt.Errorf("read CRD %s: %w", n, err)
		}
	}
	return missing, nil
}

func exists(ctx context.Context, c client.Client, u *unstructured.Unstructured, ns, name string) (bool, error) {
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s %s/%s: %w", u.GetKind(), ns, name, err)
	}
	return true, nil
}

// poll calls check every 500ms until it returns true or timeout passes.
