// Package e2eframework is the sigs.k8s.io/e2e-framework front end of the spec library, for operator
// repos whose e2e tests are e2e-framework env funcs and features rather than Ginkgo. It runs the same
// cluster set-up (framework/testenv: provider, stack, client) and the same cases (specs.Cases, each
// run in the feature's *testing.T through specs.FromTesting) as the Ginkgo front end: nothing is
// implemented twice.
//
//	var cluster = e2eframework.New(testenv.Config{Name: "my-operator", Stack: stack.ForOperandCleanup(), ...})
//
//	func TestMain(m *testing.M) {
//		cfg, err := envconf.NewFromFlags() // e2e-framework's flags (--labels, ...); env.New() reads none
//		if err != nil {
//			log.Fatal(err)
//		}
//		testEnv = env.NewWithConfig(cfg.WithParallelTestEnabled())
//		testEnv.Setup(cluster.Setup).Finish(cluster.Finish)
//		os.Exit(testEnv.Run(m))
//	}
//
//	func TestUninstall(t *testing.T) {
//		testEnv.TestInParallel(t, cluster.MustOperandCleanupFeatures(t, specs.OperandCleanupSpecInput{...})...)
//	}
package e2eframework

import (
	"context"
	"fmt"
	"os"
	"testing"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/e2e-framework/pkg/types"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/internal/ginkgox"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

// Cluster is the cluster of one e2e-framework environment: Setup starts it, Finish stops it, and the
// features built from it run on it.
type Cluster struct {
	in  testenv.Config
	env *testenv.Env
}

// New describes the cluster; nothing starts before Setup runs. in.Log defaults to stderr (go test
// shows it with -v or on failure of the package).
func New(in testenv.Config) *Cluster {
	if in.Log.GetSink() == nil {
		in.Log = ginkgox.LoggerTo(os.Stderr)
	}
	return &Cluster{in: in}
}

// Setup is an env func: it starts the provider with its stack (testenv.Start) and points the
// environment's config at it (cfg.Client() then talks to it too).
func (c *Cluster) Setup(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	ctrllog.SetLogger(c.in.Log.WithName("controller-runtime")) // libraries log through it
	env, err := testenv.Start(ctx, c.in)
	if err != nil {
		return ctx, err
	}
	c.env = env
	cfg.WithKubeconfigFile(env.Provider.KubeconfigPath())
	return ctx, nil
}

// Finish is an env func: it tears the stack down (unless the provider deletes the cluster anyway)
// and stops the provider.
func (c *Cluster) Finish(ctx context.Context, _ *envconf.Config) (context.Context, error) {
	if c.env == nil {
		return ctx, nil
	}
	return ctx, c.env.Stop(ctx)
}

// Environment is what the specs take; it fails the caller when Setup has not run.
func (c *Cluster) Environment() cluster.Environment {
	if c.env == nil {
		panic("e2eframework: the cluster is not set up: register Cluster.Setup with the environment's Setup")
	}
	return c.env.Environment
}

// Alone holds the cluster alone until done is called, for a feature of your own that acts on the whole
// cluster (stops OLM, or installs an operator globally without specs.Installation): on a shared
// cluster (kind, existing) it waits until no other run's spec is in flight; on envtest it returns at
// once (testenv.Env.Alone).
func (c *Cluster) Alone(ctx context.Context, why string) (done func(), err error) {
	if c.env == nil {
		return nil, fmt.Errorf("e2eframework: Alone(%q) before the cluster is set up: register Cluster.Setup with the environment's Setup", why)
	}
	return c.env.Alone(ctx, why)
}

// OperandCleanupFeatures are the documented operand-cleanup cases for the operator in describes (the
// cases of specs.DescribeOperandCleanup), one feature each, labelled like the Ginkgo specs
// ("operand-cleanup", the operator's name, each case's labels, its install mode). in.Environment
// defaults to this cluster. TestInParallel may run them side by side (once the environment's config
// enables parallel runs): a case in AllNamespaces mode, whose cleanup is cluster-wide, holds its
// operator's APIs exclusively (cluster.APILocker).
func (c *Cluster) OperandCleanupFeatures(in specs.OperandCleanupSpecInput) ([]types.Feature, error) {
	if in.Environment == nil {
		in.Environment = c.Environment
	}
	cases, err := specs.Cases(in)
	if err != nil {
		return nil, err
	}
	return featuresOf(fmt.Sprintf("Operand cleanup of %s", in.Name), "operand-cleanup", in.Name, cases), nil
}

// OLMv1UninstallFeatures are the OLM v1 uninstall cases for the operator in describes (the cases of
// specs.DescribeOLMv1Uninstall), one feature each, labelled "olmv1", the operator's name and each
// case's labels. The cluster's stack needs OLM v1 (stack.ForOLMv1Uninstall()). Each case holds its
// operator's APIs exclusively (cluster.APILocker), so they run one after the other even under
// TestInParallel.
func (c *Cluster) OLMv1UninstallFeatures(in specs.OperandCleanupSpecInput) ([]types.Feature, error) {
	if in.Environment == nil {
		in.Environment = c.Environment
	}
	cases, err := specs.OLMv1Cases(in)
	if err != nil {
		return nil, err
	}
	return featuresOf(fmt.Sprintf("OLM v1 uninstall of %s", in.Name), "olmv1", in.Name, cases), nil
}

// MustOLMv1UninstallFeatures is OLMv1UninstallFeatures failing t on a bad input (the error names the
// field).
func (c *Cluster) MustOLMv1UninstallFeatures(t *testing.T, in specs.OperandCleanupSpecInput) []types.Feature {
	t.Helper()
	fs, err := c.OLMv1UninstallFeatures(in)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// featuresOf makes one feature of each case, labelled with the suite, the operator, each case's labels
// and its install mode (when it has one).
func featuresOf(title, suite, operator string, cases []specs.Case) []types.Feature {
	var out []types.Feature
	for _, k := range cases {
		b := features.New(fmt.Sprintf("%s %s", title, k.Name)).WithLabel("suite", suite).WithLabel("operator", operator)
		if k.Mode != "" {
			b = b.WithLabel("mode", string(k.Mode))
		}
		for _, l := range k.Labels {
			b = b.WithLabel("case", l)
		}
		// An AllNamespaces case's cleanup reaches every namespace, but only the kinds its CSV owns: its
		// Installation holds those APIs exclusively (cluster.APILocker, on every provider), so the
		// specs that use them wait, and the others go on.
		out = append(out, b.Assess(k.Name, func(ctx context.Context, t *testing.T, _ *envconf.Config) context.Context {
			k.Run(ctx, specs.FromTesting(t))
			return ctx
		}).Feature())
	}
	return out
}

// MustOperandCleanupFeatures is OperandCleanupFeatures failing t on a bad input (the error names the
// field).
func (c *Cluster) MustOperandCleanupFeatures(t *testing.T, in specs.OperandCleanupSpecInput) []types.Feature {
	t.Helper()
	fs, err := c.OperandCleanupFeatures(in)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}
