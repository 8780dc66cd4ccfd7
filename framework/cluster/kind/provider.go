// Package kind is the Provider that runs a real single-node Kubernetes cluster in Docker with kind's Go
// packages (sigs.k8s.io/kind/pkg/cluster), on the node image scripts/kind/node-image.sh builds offline.
// Images built locally (scripts/kind/build-image.sh) reach the node with LoadImages; pods must use a
// non-latest tag (or imagePullPolicy Never / IfNotPresent) since nothing can be pulled.
//
// The host needs a Docker engine that can run --privileged containers: scripts/kind/docker.sh.
package kind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// kubeletPatches are always applied:
//   - kubelet 1.36+ refuses cgroup v1 hosts unless told otherwise, and these VMs (Docker 20.10, cgroup
//     v1 hybrid) are such hosts. Harmless on cgroup v2.
//   - the kubelet sees the host's disk: with its defaults it garbage-collects unused images above 85%
//     usage and evicts pods below 10-15% free. Nothing can be pulled again here, so a collected test
//     image would turn into ImagePullBackOff specs far from the cause. Image GC is off and eviction only
//     starts at 1% free; New checks the free space itself instead (checkDiskSpace).
var kubeletPatches = []string{`kind: KubeletConfiguration
failCgroupV1: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
  imagefs.inodesFree: "1%"
`}

// controlPlanePatches are always applied: the control plane's Go processes (API server, etcd,
// controller manager) collect garbage at GOGC=400 instead of Go's 100, as make test runs envtest's
// (scripts/test.sh). make e2e is CPU-bound on 2 cores, and its API server spent ≈ 16 % of its CPU in
// the garbage collector (a CPU profile of a kept-cluster run); at 400 a kept-cluster run is ≈ 8 %
// shorter and its node takes less CPU (docs/kind.md). The heaps grow in proportion (the API server's ≈ 1.25 GiB; the node has GiBs to spare); no behaviour
// changes. extraEnvs is kubeadm v1beta4's, which kind v0.33 writes for Kubernetes ≥ 1.36; an older
// node image's kubeadm warns about the unknown field and keeps Go's default.
var controlPlanePatches = []string{`kind: ClusterConfiguration
apiServer:
  extraEnvs:
  - name: GOGC
    value: "400"
controllerManager:
  extraEnvs:
  - name: GOGC
    value: "400"
etcd:
  local:
    extraEnvs:
    - name: GOGC
      value: "400"
`}

// validName is kind's rule for cluster names (it becomes part of container and network names).
var validName = regexp.MustCompile(`^[a-z0-9.-]+$`)

// Provider is a running kind cluster. Create it with New; Stop it when done.
type Provider struct {
	opts       options
	kind       *kindcluster.Provider
	workDir    string
	kubeconfig string
	cfg        *rest.Config

	stopOnce sync.Once
	stopErr  error
	// attached: made by Connect; Stop only removes its kubeconfig copy.
	attached bool
}

// New creates the named cluster, or reuses it when one of that name exists, runs the wanted node image
// and is healthy; an unhealthy or outdated one is deleted and recreated (with a message saying why).
// It returns once the cluster is usable: node Ready, CoreDNS available, default ServiceAccount present,
// and the images of WithImages are loaded.
func New(ctx context.Context, opts ...Option) (_ *Provider, err error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	if o.keep == nil {
		keep := envvar.KeepCluster.Get() == "1"
		o.keep = &keep
	}
	if !validName.MatchString(o.name) {
		return nil, fmt.Errorf("kind cluster name %q (WithName, or $KIND_CLUSTER_NAME for make e2e) is invalid: it must match %s", o.name, validName)
	}
	start := time.Now()
	if o.nodeImage == "" {
		if o.nodeImage, err = DefaultNodeImage(); err != nil {
			return nil, err
		}
	}
	if err := checkDocker(ctx); err != nil {
		return nil, err
	}
	if err := checkDiskSpace(ctx, minFreeForCluster); err != nil {
		return nil, err
	}
	p := &Provider{
		opts:    o,
		kind:    kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(kindLogger{o.log.WithName("kind")})),
		workDir: filepath.Join(o.workRoot, "kind-"+o.name),
	}
	p.kubeconfig = filepath.Join(p.workDir, "kubeconfig")
	if err := os.MkdirAll(p.workDir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && !*o.keep {
			_ = p.Stop(context.WithoutCancel(ctx))
		}
	}()

	reused := false
	if o.reuse {
		if reused, err = p.tryReuse(ctx); err != nil {
			return nil, err
		}
	} else if err := p.deleteExisting("reuse disabled"); err != nil {
		return nil, err
	}
	if !reused {
		if err := p.step("create kind cluster "+o.name+" ("+o.nodeImage+")", p.create); err != nil {
			return nil, fmt.Errorf("%w (node logs: set CLEANUP_E2E_KEEP_CLUSTER=1 and run `kind export logs --name %s`, or call CollectArtifacts)", err, o.name)
		}
		if err := p.loadConfig(); err != nil {
			return nil, err
		}
	}
	load := make(chan error, 1)
	go func() { load <- p.LoadImages(ctx, o.images...) }() // WithImages: beside the wait
	waited := p.step("wait for the cluster to be usable", func() error { return p.waitUsable(ctx, intervals.ClusterReady, o.readyTimeout) })
	if err := errors.Join(waited, <-load); err != nil {
		return nil, err
	}
	o.log.Info("provider ready", "name", o.name, "reused", reused, "kubeconfig", p.kubeconfig,
		"took", time.Since(start).Round(time.Millisecond).String())
	return p, nil
}

// DefaultNodeImage is $CLEANUP_E2E_KIND_NODE_IMAGE, else the image scripts/kind/node-image.sh last built.
func DefaultNodeImage() (string, error) {
	if img := envvar.KindNodeImage.Get(); img != "" {
		return img, nil
	}
	f := filepath.Join(toolchain.CacheDir(), "kind", "node-image")
	data, err := os.ReadFile(f)
	if err != nil {
		return "", fmt.Errorf("no kind node image recorded in %s: run scripts/kind/node-image.sh (or set CLEANUP_E2E_KIND_NODE_IMAGE): %w", f, err)
	}
	img := strings.TrimSpace(string(data))
	if _, err := dockerOutput(context.Background(), "image", "inspect", "--format", "{{.Id}}", img); err != nil {
		return "", fmt.Errorf("node image %s (recorded in %s) is not in Docker any more: rerun scripts/kind/node-image.sh: %w", img, f, err)
	}
	return img, nil
}

func (p *Provider) step(what string, fn func() error) error {
	start := time.Now()
	p.opts.log.Info("starting " + what)
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	p.opts.log.Info("done: "+what, "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

func (p *Provider) clusterConfig() (*kindv1alpha4.Cluster, error) {
	audit, err := p.auditMount()
	if err != nil {
		return nil, err
	}
	cfg := &kindv1alpha4.Cluster{
		TypeMeta: kindv1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Name:     p.opts.name,
		Nodes: []kindv1alpha4.Node{{Role: kindv1alpha4.ControlPlaneRole, Image: p.opts.nodeImage,
			ExtraMounts: []kindv1alpha4.Mount{audit}}},
		// The node image bakes a ptp/host-local CNI config (no kindnetd image can be pulled): single node.
		Networking:                   kindv1alpha4.Networking{DisableDefaultCNI: true},
		KubeadmConfigPatches:         slices.Concat(kubeletPatches, controlPlanePatches, p.opts.patches),
		KubeadmConfigPatchesJSON6902: auditPatches,
	}
	kindv1alpha4.SetDefaultsCluster(cfg)
	return cfg, nil
}

func (p *Provider) create() error {
	if err := noteCreating(p.opts.name); err != nil {
		return err
	}
	cfg, err := p.clusterConfig()
	if err != nil {
		return err
	}
	return p.kind.Create(p.opts.name,
		kindcluster.CreateWithV1Alpha4Config(cfg),
		kindcluster.CreateWithNodeImage(p.opts.nodeImage),
		kindcluster.CreateWithKubeconfigPath(p.kubeconfig),
		kindcluster.CreateWithWaitForReady(p.opts.readyTimeout),
		kindcluster.CreateWithRetain(*p.opts.keep),
		kindcluster.CreateWithDisplayUsage(false),
		kindcluster.CreateWithDisplaySalutation(false),
	)
}

var (
	_ cluster.Provider   = (*Provider)(nil)
	_ cluster.Disposable = (*Provider)(nil)
	_ cluster.AuditLogs  = (*Provider)(nil)
)

// tryReuse reuses a healthy existing cluster running the wanted image; anything else of that name is
// deleted (saying why) so that New creates it afresh.
func (p *Provider) tryReuse(ctx context.Context) (bool, error) {
	exists, err := p.exists()
	if err != nil || !exists {
		return false, err
	}
	if !createdByProvider(p.opts.name) {
		return false, errNotOurs(p.opts.name, "a run would delete it at its end, or when it is outdated")
	}
	reason := p.unhealthy(ctx)
	if reason == "" {
		p.opts.log.Info("reusing existing kind cluster", "name", p.opts.name)
		return true, nil
	}
	p.opts.log.Info(fmt.Sprintf("kind cluster %q exists but cannot be reused (%s): deleting and recreating it", p.opts.name, reason))
	return false, p.deleteExisting(reason)
}

func (p *Provider) exists() (bool, error) {
	names, err := p.kind.List()
	if err != nil {
		return false, fmt.Errorf("list kind clusters: %w", err)
	}
	for _, n := range names {
		if n == p.opts.name {
			return true, nil
		}
	}
	return false, nil
}

// unhealthy says why an existing cluster cannot be reused ("" when it can).
func (p *Provider) unhealthy(ctx context.Context) string {
	nodes, err := p.kind.ListNodes(p.opts.name)
	if err != nil || len(nodes) == 0 {
		return fmt.Sprintf("cannot list its nodes: %v", err)
	}
	if len(nodes) != 1 {
		return fmt.Sprintf("%d nodes, this provider runs single-node clusters", len(nodes))
	}
	node := nodes[0].String()
	state, err := dockerOutput(ctx, "inspect", "--format", "{{.State.Status}} {{.Config.Image}}", node)
	if err != nil {
		return fmt.Sprintf("docker inspect %s: %v", node, err)
	}
	status, image, _ := strings.Cut(state, " ")
	if status != "running" {
		return fmt.Sprintf("node container %s is %s", node, status)
	}
	if image != p.opts.nodeImage {
		return fmt.Sprintf("node runs image %s, want %s", image, p.opts.nodeImage)
	}
	if err := p.loadConfig(); err != nil {
		return err.Error()
	}
	if err := p.waitUsable(ctx, intervals.Reachable, 0); err != nil {
		return err.Error()
	}
	return p.noAuditLog()
}

func (p *Provider) deleteExisting(reason string) error {
	exists, err := p.exists()
	if err != nil || !exists {
		return err
	}
	if !createdByProvider(p.opts.name) {
		return errNotOurs(p.opts.name, "the provider would delete it: "+reason)
	}
	err = p.step(fmt.Sprintf("delete kind cluster %s (%s)", p.opts.name, reason), func() error {
		return p.kind.Delete(p.opts.name, p.kubeconfig)
	})
	if err == nil {
		forgetCreated(p.opts.name)
	}
	return err
}

// loadConfig writes the cluster's admin kubeconfig to the work dir and loads it.
func (p *Provider) loadConfig() error {
	raw, err := p.kind.KubeConfig(p.opts.name, false)
	if err != nil {
		return fmt.Errorf("get kubeconfig of kind cluster %s: %w", p.opts.name, err)
	}
	if err := os.WriteFile(p.kubeconfig, []byte(raw), 0o600); err != nil {
		return err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	if err != nil {
		return fmt.Errorf("parse kubeconfig of kind cluster %s: %w", p.opts.name, err)
	}
	p.cfg = cfg
	return nil
}

// Name implements cluster.Provider.
func (p *Provider) Name() string { return p.opts.name }

// Kind implements cluster.Provider.
func (p *Provider) Kind() string { return "kind" }

// MayHoldForeignObjects implements cluster.ForeignObjects: the provider creates the cluster (and reuses
// only one it created, createdByProvider), so everything on it belongs to the framework's runs.
func (p *Provider) MayHoldForeignObjects() bool { return false }

// RESTConfig implements cluster.Provider.
func (p *Provider) RESTConfig() *rest.Config { return p.cfg }

// KubeconfigPath implements cluster.Provider.
func (p *Provider) KubeconfigPath() string { return p.kubeconfig }

// NodeImage is the node image the cluster runs.
func (p *Provider) NodeImage() string { return p.opts.nodeImage }

// CollectArtifacts implements cluster.Provider: kind's `export logs` (journal, kubelet, containerd, pod
// logs, images per node) under dir.
func (p *Provider) CollectArtifacts(ctx context.Context, dir string) error {
	return p.step("export kind logs to "+dir, func() error { return p.kind.CollectLogs(p.opts.name, dir) })
}

// DeletesClusterOnStop implements cluster.Disposable: true unless the cluster is kept or was only
// attached to.
func (p *Provider) DeletesClusterOnStop() bool { return !p.attached && !*p.opts.keep }

// Stop deletes the cluster unless it is kept (WithKeepCluster, CLEANUP_E2E_KEEP_CLUSTER=1). Idempotent.
func (p *Provider) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() {
		if p.attached {
			p.stopErr = os.Remove(p.kubeconfig)
			return
		}
		if *p.opts.keep {
			p.opts.log.Info("keeping kind cluster (CLEANUP_E2E_KEEP_CLUSTER=1)", "name", p.opts.name, "kubeconfig", p.kubeconfig,
				"delete", "kind delete cluster --name "+p.opts.name)
			return
		}
		err := p.deleteExisting("Stop")
		p.stopErr = errors.Join(err, os.RemoveAll(p.workDir))
	})
	return p.stopErr
}

// Connect attaches to a running cluster of that name, created by another Provider (e.g. in Ginkgo's
// first parallel process): it writes its own copy of the kubeconfig, creates and checks nothing, and
// its Stop never deletes the cluster. Options other than WithName, WithLogger and WithWorkRoot are ignored.
func Connect(ctx context.Context, opts ...Option) (*Provider, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	keep := true
	o.keep = &keep
	p := &Provider{
		opts:     o,
		kind:     kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(kindLogger{o.log.WithName("kind")})),
		workDir:  filepath.Join(o.workRoot, "kind-"+o.name),
		attached: true,
	}
	p.kubeconfig = filepath.Join(p.workDir, fmt.Sprintf("kubeconfig-%d", os.Getpid()))
	if err := os.MkdirAll(p.workDir, 0o755); err != nil {
		return nil, err
	}
	if exists, err := p.exists(); err != nil || !exists {
		return nil, fmt.Errorf("connect to kind cluster %s: it does not exist (%v)", o.name, err)
	}
	if nodes, err := p.kind.ListNodes(o.name); err == nil && len(nodes) == 1 {
		if img, err := dockerOutput(ctx, "inspect", "--format", "{{.Config.Image}}", nodes[0].String()); err == nil {
			p.opts.nodeImage = img
		}
	}
	if err := p.loadConfig(); err != nil {
		return nil, err
	}
	return p, nil
}
