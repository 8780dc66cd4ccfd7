package existing

import (
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
)

type options struct {
	name            string
	kubeconfig      string
	context         string
	log             logr.Logger
	workRoot        string
	olm             bool
	operandCleanup  bool
	clusterOperator bool
	waitOnly        bool
	readyTimeout    time.Duration
	cleanupArgs     []string
	runLeftovers    RunLeftovers
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

// WithoutOLM neither requires nor checks OLM (suites of the payload applier).
func WithoutOLM() Option { return func(o *options) { o.olm = false } }

// WithoutOperandCleanup neither requires nor installs the operand-cleanup controller.
func WithoutOperandCleanup() Option { return func(o *options) { o.operandCleanup = false } }

// WithClusterOperatorCRD installs the ClusterOperator CRD (config/crd) when it is missing, for suites of
// CVO-style payloads. Off by default: olm-operator treats a cluster serving config.openshift.io as
// OpenShift, and once restarted waits forever for the Proxy API such a cluster lacks.
func WithClusterOperatorCRD() Option { return func(o *options) { o.clusterOperator = true } }

// WithWaitOnly installs nothing: it waits for what is missing to appear (installed by another process
// of the same run, e.g. Ginkgo process 1) and so never removes anything on Stop.
func WithWaitOnly() Option { return func(o *options) { o.waitOnly = true } }

// WithReadyTimeout bounds each wait: OLM reconciling, the controller available, a CRD established
// (default 2m).
func WithReadyTimeout(d time.Duration) Option { return func(o *options) { o.readyTimeout = d } }

// WithOperandCleanupArgs overrides flags of the operand-cleanup controller the provider installs (e.g.
// "--stall-timeout=5s"); a controller that was already there is left as it is.
func WithOperandCleanupArgs(args ...string) Option {
	return func(o *options) { o.cleanupArgs = append(o.cleanupArgs, args...) }
}

func defaults() options {
	return options{
		name:           "existing",
		log:            logr.Discard(),
		workRoot:       filepath.Join(os.TempDir(), "cleanup-e2e"),
		olm:            true,
		operandCleanup: true,
		readyTimeout:   2 * time.Minute,
	}
}
