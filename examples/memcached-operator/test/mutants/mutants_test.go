// Package mutants proves that the uninstall checks of test/uninstall catch a broken memcached-operator:
// variants of its own source with one defect each (framework/mutate) must each fail the
// cleanup-enabled case with a message naming the defect, and the real operator must pass.
package mutants

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/mutate"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"

	cachev1alpha1 "example.com/memcached-operator/api/v1alpha1"
	"example.com/memcached-operator/test/uninstall"
)

const controller = "internal/controller/memcached_controller.go"

func TestTheUninstallChecksCatchABrokenOperator(t *testing.T) {
	// The start's backstop (intervals.SuiteSetup) plus the cases' 10 min: on a busy machine a start may
	// queue for minutes behind the other control planes starting (cleanup-e2e's start slots).
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SuiteSetup)+intervals.Scaled(10*time.Minute))
	defer cancel()
	ctrllog.SetLogger(testr.New(t)) // the framework's clients log through controller-runtime
	registry := localruntime.NewRegistry()
	in := uninstall.Cluster()
	in.Provider, in.Log, in.Registry = "envtest", testr.New(t), registry // binaries only run on envtest
	// Its own name: the uninstall suite's cluster runs at the same time, and the two setups' lines in
	// the time budget, their logs and audit files must not read as one suite's.
	in.Name = "memcached-mutants"
	in.Schemes = []func(*runtime.Scheme) error{cachev1alpha1.AddToScheme}
	env, err := testenv.Start(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop(context.Background()) }()

	spec := uninstall.Spec(func() cluster.Environment { return env.Environment }, uninstall.Bundle("envtest"))
	enabled, err := specs.EnabledCase(spec, operatorsv1alpha1.InstallModeTypeAllNamespaces)
	if err != nil {
		t.Fatal(err)
	}
	variant := func(name string, edits ...mutate.Edit) func() error {
		return func() error {
			// Kept in the user's cache while the operator's source is unchanged, so the go build
			// cache compiles and links each variant once, not on every run.
			dir, err := mutate.Variant("../..", edits...)
			if err != nil {
				return err
			}
			// Built here, before the case's clock starts (the runtime would build it when the
			// Deployment appears, inside the install's wait).
			registry.RegisterBinary(uninstall.Image, localruntime.Binary{Package: "./cmd", Dir: dir})
			return registry.BuildBinaries(ctx, filepath.Join(t.TempDir(), name), testr.New(t))
		}
	}
	specs.CheckMutants(ctx, t, enabled,
		specs.Mutant{Use: variant("real")},
		// The image name read from an env var the Deployment does not set: the finalizer is added, no
		// Deployment is ever made.
		specs.Mutant{Name: "never-reconciles", Use: variant("never-reconciles", mutate.Edit{File: controller,
			Old: `os.LookupEnv("MEMCACHED_IMAGE")`, New: `os.LookupEnv("MEMCACHED_IMAGE_TYPO")`}),
			Want: []string{"operator should reconcile Memcached", "no Deployment in namespace"}, CaughtBy: specs.WaitReconciled},
		// The finalizer removes itself without removing the sample's ClusterRole.
		specs.Mutant{Name: "never-finalizes", Use: variant("never-finalizes", mutate.Edit{File: controller,
			Old: `if err := r.deleteViewerRole(ctx, memcached); err != nil {`, New: `if err := error(nil); err != nil {`}),
			Want: []string{"ClusterRole memcached-", "-viewer still exists", "should have removed it"}, CaughtBy: specs.WaitRemoved},
		// A second ClusterRole per sample that nothing removes.
		specs.Mutant{Name: "leaks-an-object", Use: variant("leaks-an-object", mutate.Edit{File: controller,
			Old: `	if err := r.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {`,
			New: `	leaked := role.DeepCopy()
	leaked.Name += "-leaked"
	_ = r.Create(ctx, leaked)
	if err := r.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {`}),
			Want: []string{"left behind by the installation", "-viewer-leaked"}, CaughtBy: specs.WaitLeftovers},
	)
}
