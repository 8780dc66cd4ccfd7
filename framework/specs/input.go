package specs

import (
	"context"
	"fmt"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/leftovers"
)

// OperandCleanupSpecInput describes the operator under test.
type OperandCleanupSpecInput struct {
	// Environment returns the cluster to run on.
	Environment func() cluster.Environment
	// Name prefixes namespaces and labels the container (e.g. "widget-operator").
	Name string
	// BundleDir is the registry-v1 bundle to install.
	BundleDir string
	// UpgradeBundleDirs are the next versions, in channel order; with any, the upgrade case runs.
	UpgradeBundleDirs []string
	// InstallModes to test; each gets its own cleanup-enabled spec, and the first runs the single-mode
	// specs. Default: every mode the bundle's CSV supports (SupportedInstallModes).
	InstallModes []operatorsv1alpha1.InstallModeType
	// Samples returns the operands to create in a namespace. Cluster-scoped samples get the namespace
	// appended to their name; they are cleaned up only by a global (AllNamespaces) operator.
	// MustALMExamples(BundleDir) gives the CSV's own samples (its alm-examples annotation).
	Samples func(namespace string) []*unstructured.Unstructured
	// Reconciled says whether the operator has taken charge of a sample; the specs wait for it before
	// uninstalling, so the operator's finalizer has work to do. Check what only a working operator
	// does: its finalizer *and* something it made for the sample (an owned object, a status condition,
	// an external record). A check of the finalizer alone passes for an operator whose reconciler
	// adds the finalizer and then fails. Unset, the specs cannot catch an operator that never
	// reconciles (they warn); the mutation checks in framework/specs show what a good check catches.
	Reconciled func(ctx context.Context, c client.Client, sample *unstructured.Unstructured) error
	// Finalized checks that the operator's finalizer did its job for a removed sample (e.g. a
	// resource it made in another namespace, or outside the cluster, is gone). Unset, a finalizer that
	// only removes itself passes (the specs warn).
	Finalized func(ctx context.Context, c client.Client, sample *unstructured.Unstructured) error
	// BeforeInstall, if set, runs before each install, once the case holds the operator's APIs: to
	// install what the operator requires that OLM does not (OLM v1 resolves no dependencies: e.g. the
	// CRDs of an API the CSV requires, with specs.WithoutRequiredAPIs for the bundle).
	BeforeInstall func(ctx context.Context, c client.Client) error
	// PendingListCap is the most instances the controller lists in status.cleanup.pendingDeletion;
	// the listing spec creates 20 more. Default: the --max-pending-listed of the operand-cleanup
	// Deployment on the cluster (the stack installs it with 10), else the controller's default, 100.
	PendingListCap int
	// Timeout bounds each wait (default: intervals.SpecStep, 2m scaled by $CLEANUP_E2E_WAIT_SCALE).
	Timeout time.Duration

	// LeftoverNamespaces are namespaces outside the installation's own that the operator writes into
	// (e.g. widget-operator's shared records namespace): the leftovers check lists them too. Objects
	// there count only when something links them to the installation (see framework/leftovers).
	LeftoverNamespaces []string
	// ExpectedLeftovers are objects the operator is known to leave behind after a cleanup-enabled
	// uninstall: they are reported, and do not fail the check.
	ExpectedLeftovers []leftovers.Matcher
	// SkipLeftoversCheck turns off the leftovers check of the cleanup-enabled cases.
	SkipLeftoversCheck bool
	// LeftoversTimeout is how long the check waits for leftovers to go (garbage collection, finalizers
	// still running) before it fails (default: intervals.Leftovers, 30s scaled).
	LeftoversTimeout time.Duration
}

func (in *OperandCleanupSpecInput) defaults() error {
	if in.Environment == nil || in.BundleDir == "" || in.Samples == nil || in.Name == "" {
		return fmt.Errorf("OperandCleanupSpecInput needs Environment, Name, BundleDir and Samples")
	}
	if len(in.InstallModes) == 0 {
		modes, err := SupportedInstallModes(in.BundleDir)
		if err != nil {
			return err
		}
		in.InstallModes = modes
	}
	in.Timeout = intervals.Or(in.Timeout, intervals.SpecStep)
	in.LeftoversTimeout = intervals.Or(in.LeftoversTimeout, intervals.Leftovers)
	return nil
}
