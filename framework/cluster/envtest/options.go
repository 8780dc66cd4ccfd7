package envtest

import (
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
)

type options struct {
	name       string
	olm        bool
	olmv1      bool
	registry   *localruntime.Registry
	log        logr.Logger
	workRoot   string
	crds       []*apiextensionsv1.CustomResourceDefinition
	crdPaths   []string
	olmTimeout time.Duration
	// ports picks the kube-apiserver port for a start attempt (0: let envtest choose a free one). Tests
	// use it to hand out a taken port.
	ports func(attempt int) int
	// auditDir is where the API server writes its audit log (audit.go): $CLEANUP_E2E_AUDIT_DIR, or a
	// test's own directory (a parallel test cannot set the variable).
	auditDir string
}

// Option configures the envtest provider.
type Option func(*options)

// WithName names the provider (logs, artifact paths). Default: "envtest".
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithoutOLM starts only the control plane (for suites that do not need OLM, e.g. the payload applier).
func WithoutOLM() Option { return func(o *options) { o.olm = false } }

// WithRegistry sets the images the local runtime runs in-process. Without it, no Deployment ever
// becomes available.
func WithRegistry(r *localruntime.Registry) Option { return func(o *options) { o.registry = r } }

// WithLogger sets where progress is reported (start/stop steps with their durations).
func WithLogger(l logr.Logger) Option { return func(o *options) { o.log = l } }

// WithWorkRoot sets the directory under which each provider makes its work directory
// (default $TMPDIR/cleanup-e2e). Stale work directories of dead runs there are reaped at start.
func WithWorkRoot(dir string) Option { return func(o *options) { o.workRoot = dir } }

// WithCRDs installs extra CRDs when the control plane starts.
func WithCRDs(crds ...*apiextensionsv1.CustomResourceDefinition) Option {
	return func(o *options) { o.crds = append(o.crds, crds...) }
}

// WithCRDPaths installs the CRDs found in these files or directories when the control plane starts.
func WithCRDPaths(paths ...string) Option {
	return func(o *options) { o.crdPaths = append(o.crdPaths, paths...) }
}

// WithOLMReadyTimeout bounds the wait for OLM to reconcile (default: intervals.OLMReady, 2m scaled: its first start lists every API).
func WithOLMReadyTimeout(d time.Duration) Option { return func(o *options) { o.olmTimeout = d } }

func defaults() options {
	return options{
		name:       "envtest",
		olm:        true,
		registry:   localruntime.NewRegistry(),
		log:        logr.Discard(),
		workRoot:   filepath.Join(os.TempDir(), "cleanup-e2e"),
		olmTimeout: intervals.Get(intervals.OLMReady),
		auditDir:   envvar.AuditDir.Get(),
	}
}
