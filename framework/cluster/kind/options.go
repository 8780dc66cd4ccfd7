package kind

import (
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

type options struct {
	name         string
	nodeImage    string
	log          logr.Logger
	workRoot     string
	keep         *bool
	readyTimeout time.Duration
	patches      []string
	reuse        bool
	images       []string
}

// Option configures the kind provider.
type Option func(*options)

// WithName names the kind cluster (and the provider, in logs and artifact paths). Default: "cleanup-e2e".
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithNodeImage sets the node image. Default: the image scripts/kind/node-image.sh last built (recorded
// in <cache>/kind/node-image), or $CLEANUP_E2E_KIND_NODE_IMAGE when set.
func WithNodeImage(image string) Option { return func(o *options) { o.nodeImage = image } }

// WithLogger sets where progress is reported (steps with their durations, kind's own messages at V(1)).
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

// WithWorkRoot sets the directory under which the provider keeps its kubeconfig
// (<root>/kind-<name>/kubeconfig; default root $TMPDIR/cleanup-e2e-kind).
func WithWorkRoot(dir string) Option { return func(o *options) { o.workRoot = dir } }

// WithKeepCluster decides whether Stop leaves the cluster running (default: $CLEANUP_E2E_KEEP_CLUSTER=1).
// A kept cluster is reused by the next provider of the same name, if it is healthy.
func WithKeepCluster(keep bool) Option { return func(o *options) { o.keep = &keep } }

// WithoutReuse deletes an existing cluster of the same name instead of reusing it, even when healthy.
func WithoutReuse() Option { return func(o *options) { o.reuse = false } }

// WithReadyTimeout bounds the wait for the cluster to be usable (node Ready, CoreDNS available, default
// ServiceAccount present). Default 3m.
func WithReadyTimeout(d time.Duration) Option { return func(o *options) { o.readyTimeout = d } }

// WithKubeadmConfigPatches adds kubeadm config patches (strategic merge YAML, as in kind's
// kubeadmConfigPatches) to the ones the provider always applies.
func WithKubeadmConfigPatches(patches ...string) Option {
	return func(o *options) { o.patches = append(o.patches, patches...) }
}

// WithImages loads these images of the host's Docker into the node (as LoadImages: only those it lacks)
// while New waits for the cluster to be usable. That wait is mostly idle — ≈ 10 s on a new cluster,
// CoreDNS starting — and the load of make e2e's 17 images took 15–17 s after it.
func WithImages(images ...string) Option {
	return func(o *options) { o.images = append(o.images, images...) }
}

func defaults() options {
	return options{
		name: defaultName,
		log:  logr.Discard(),
		// Not $TMPDIR/cleanup-e2e: the envtest provider reaps every directory there whose owner.pid
		// process is gone (and kills processes naming it), which would take a kept cluster's kubeconfig.
		workRoot:     filepath.Join(os.TempDir(), "cleanup-e2e-kind"),
		readyTimeout: intervals.Get(intervals.ClusterReady),
		reuse:        true,
	}
}
