package existing

import (
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
)

type options struct {
	name       string
	kubeconfig string
	context    string
	log        logr.Logger
	workRoot   string
}

// Option configures the existing-cluster provider.
type Option func(*options)

// WithName names the provider (logs, artifact paths). Default: "existing".
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithKubeconfig reads the cluster from this kubeconfig file instead of $KUBECONFIG / ~/.kube/config
// (in a pod without either, the in-cluster config is used).
func WithKubeconfig(path string) Option { return func(o *options) { o.kubeconfig = path } }

// WithContext selects a kubeconfig context other than the current one (kubectl's --context).
func WithContext(name string) Option { return func(o *options) { o.context = name } }

// WithLogger sets where progress is reported (what was found, installed and removed).
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

// WithWorkRoot sets the directory under which the provider writes its kubeconfig for child processes
// (default $TMPDIR/cleanup-e2e). Stop removes it.
func WithWorkRoot(dir string) Option { return func(o *options) { o.workRoot = dir } }

func defaults() options {
	return options{
		name:     "existing",
		log:      logr.Discard(),
		workRoot: filepath.Join(os.TempDir(), "cleanup-e2e"),
	}
}
