package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/existing"
	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
)

// Setup is what a suite does with its cluster once the provider and the stack are up. Both hooks are
// optional.
type Setup struct {
	// Cluster runs once per cluster, after the stack: in every process on envtest (one cluster per
	// process), only in process 1 on kind and existing (one cluster shared by all processes).
	Cluster func(ctx context.Context, env cluster.Environment)
	// Process runs in every Ginkgo process with the environment its specs use.
	Process func(ctx context.Context, env cluster.Environment)
}

// SharedCluster reports whether CLEANUP_E2E_PROVIDER names a provider whose one cluster all parallel
// Ginkgo processes share (kind, existing), rather than one provider per process (envtest). On a shared
// cluster only process 1 ensures (and later tears down) the stack.
func SharedCluster() bool {
	p := envvar.Provider.Get()
	return p == "kind" || p == "existing"
}

// Environment registers the suite's set-up and tear-down (SynchronizedProvider) and returns what the
// spec libraries take: the environment of the calling Ginkgo process, once BeforeSuite ran. Use it at
// the top level:
//
//	var env = suite.Environment(suite.ProviderInput{Name: "my-operator", Stack: stack.ForOperandCleanup(), ...})
func Environment(in ProviderInput, decorators ...any) func() cluster.Environment {
	var env cluster.Environment
	SynchronizedProvider(in, Setup{Process: func(_ context.Context, e cluster.Environment) { env = e }}, decorators...)
	return func() cluster.Environment {
		if env.Client == nil {
			ginkgo.Fail("the suite's environment is not set up: call it from a spec or a node that runs after BeforeSuite, " +
				"not while the spec tree is built")
		}
		return env
	}
}

// SynchronizedProvider registers the suite's SynchronizedBeforeSuite and SynchronizedAfterSuite (so a
// suite using it has no BeforeSuite/AfterSuite of its own). The process that owns a cluster starts the
// provider (NewProvider), ensures in.Stack on it (framework/stack: detected, installed when missing,
// recorded) and runs setup.Cluster; on kind and existing that is process 1, which hands the cluster's
// name to the others, which connect to it. At the end the owner tears the stack down (skipped when the
// provider deletes the cluster anyway) and stops the provider, after every process is done. decorators
// (e.g. NodeTimeout) apply to the before-suite node. Use at the top level: var _ = ...
func SynchronizedProvider(in ProviderInput, setup Setup, decorators ...any) bool {
	var primary, own *owned // primary: process 1's shared cluster; own: this process's provider
	ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
		if !SharedCluster() {
			return nil
		}
		primary = start(ctx, in, setup)
		data, _ := json.Marshal(sharedInfo{Kind: primary.p.Kind(), Name: primary.p.Name()})
		return data
	}, func(ctx context.Context, data []byte) {
		var p cluster.Provider
		switch {
		case !SharedCluster():
			own = start(ctx, in, setup)
			p = own.p
		case primary != nil: // process 1
			p = primary.p
		default:
			var info sharedInfo
			if err := json.Unmarshal(data, &info); err != nil {
				ginkgo.Fail(fmt.Sprintf("decode the shared cluster from process 1: %v", err))
			}
			c, err := connectShared(ctx, info)
			if err != nil {
				ginkgo.Fail(fmt.Sprintf("connect to the %s cluster %s of process 1: %v", info.Kind, info.Name, err))
			}
			own, p = &owned{p: c}, c
		}
		if setup.Process != nil {
			setup.Process(ctx, environment(p, in))
		}
	}, decorators...)
	ginkgo.SynchronizedAfterSuite(func(ctx context.Context) {
		own.stop(ctx)
	}, func(ctx context.Context) {
		primary.stop(ctx)
	})
	return true
}

// owned is a provider this process started or connected to, and the stack it ensured (nil when it
// only connected to process 1's cluster).
type owned struct {
	p     cluster.Provider
	stack *stack.Stack
}

// start brings up a provider and its stack, then runs setup.Cluster.
func start(ctx context.Context, in ProviderInput, setup Setup) *owned {
	p, err := NewProvider(ctx, in)
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("start provider %s=%s: %v", envvar.Provider.Name, envvar.Provider.Get(), err))
	}
	env := environment(p, in)
	s, err := stack.Ensure(ctx, stack.Input{Components: in.Stack, Client: env.Client, Log: Logger().WithName(in.Name + "-stack")})
	if err != nil {
		_ = p.Stop(context.WithoutCancel(ctx))
		ginkgo.Fail(fmt.Sprintf("ensure the stack on provider %s: %v", p.Name(), err))
	}
	if setup.Cluster != nil {
		setup.Cluster(ctx, env)
	}
	return &owned{p: p, stack: s}
}

// stop tears the stack down unless the provider deletes the cluster anyway, then stops the provider.
func (o *owned) stop(ctx context.Context) {
	if o == nil {
		return
	}
	var errs []error
	if d, ok := o.p.(cluster.Disposable); o.stack != nil && !(ok && d.DeletesClusterOnStop()) {
		errs = append(errs, o.stack.Teardown(ctx))
	}
	errs = append(errs, o.p.Stop(ctx))
	if err := errors.Join(errs...); err != nil {
		ginkgo.Fail(fmt.Sprintf("stop provider %s: %v", o.p.Name(), err))
	}
}

// environment builds the specs' client for p (scheme: kube.MustScheme plus in.Schemes).
func environment(p cluster.Provider, in ProviderInput) cluster.Environment {
	c, err := kube.NewClient(p.RESTConfig(), kube.MustScheme(in.Schemes...))
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("client for provider %s: %v", p.Name(), err))
	}
	return cluster.Environment{Provider: p, Client: c}
}

type sharedInfo struct{ Kind, Name string }

// connectShared connects a Ginkgo process other than 1 to the cluster process 1 set up.
func connectShared(ctx context.Context, info sharedInfo) (cluster.Provider, error) {
	routeLibraryLogs()
	if info.Kind == "existing" {
		return existing.New(ctx, existing.WithName(info.Name), existing.WithLogger(Logger().WithName(info.Name)),
			existing.WithContext(envvar.KubeContext.Get()))
	}
	return connectKind(ctx, info.Name)
}
