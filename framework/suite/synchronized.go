package suite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
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

// Environment registers the suite's set-up and tear-down (SynchronizedProvider) and returns what the
// spec libraries take: the environment of the calling Ginkgo process, once BeforeSuite ran. Use it at
// the top level:
//
//	var env = suite.Environment(testenv.Input{Name: "my-operator", Stack: stack.ForOperandCleanup(), ...})
func Environment(in testenv.Input, decorators ...any) func() cluster.Environment {
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
// suite using it has no BeforeSuite/AfterSuite of its own). The process that owns a cluster starts it
// with its stack (testenv.Start) and runs setup.Cluster; on kind and existing that is process 1, which
// hands the cluster's name to the others, which connect to it. At the end the owner tears the stack
// down (skipped when the provider deletes the cluster anyway) and stops the provider, after every
// process is done. in.Name gets the process number; in.Log defaults to GinkgoWriter. decorators
// (e.g. NodeTimeout) apply to the before-suite node. Use at the top level: var _ = ...
func SynchronizedProvider(in testenv.Input, setup Setup, decorators ...any) bool {
	var primary, own *testenv.Env // primary: process 1's shared cluster; own: this process's
	if in.Log.GetSink() == nil {
		in.Log = Logger()
	}
	start := func(ctx context.Context) *testenv.Env {
		routeLibraryLogs()
		in := in
		in.Name = fmt.Sprintf("%s-%d", in.Name, ginkgo.GinkgoParallelProcess())
		suiteCfg, _ := ginkgo.GinkgoConfiguration()
		in.KeepCluster = in.KeepCluster || suiteCfg.ParallelTotal > 1 // the other processes still use it
		env, err := testenv.Start(ctx, in)
		if err != nil {
			ginkgo.Fail(err.Error())
		}
		if setup.Cluster != nil {
			setup.Cluster(ctx, env.Environment)
		}
		return env
	}
	ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
		if !in.Shared() {
			return nil
		}
		primary = start(ctx)
		data, _ := json.Marshal(sharedInfo{Kind: in.ProviderName(), Name: primary.Provider.Name()})
		return data
	}, func(ctx context.Context, data []byte) {
		var env cluster.Environment
		switch {
		case !in.Shared():
			own = start(ctx)
			env = own.Environment
		case primary != nil: // process 1
			env = primary.Environment
		default:
			routeLibraryLogs()
			var info sharedInfo
			if err := json.Unmarshal(data, &info); err != nil {
				ginkgo.Fail(fmt.Sprintf("decode the shared cluster from process 1: %v", err))
			}
			p, err := testenv.Connect(ctx, info.Kind, info.Name, in.Log)
			if err != nil {
				ginkgo.Fail(fmt.Sprintf("connect to the %s cluster %s of process 1: %v", info.Kind, info.Name, err))
			}
			if env, err = testenv.Connected(p, in.Schemes...); err != nil {
				ginkgo.Fail(err.Error())
			}
			own = &testenv.Env{Environment: env} // stopping it only disconnects
		}
		if setup.Process != nil {
			setup.Process(ctx, env)
		}
	}, decorators...)
	ginkgo.SynchronizedAfterSuite(func(ctx context.Context) { stop(ctx, own) }, func(ctx context.Context) { stop(ctx, primary) })
	return true
}

func stop(ctx context.Context, env *testenv.Env) {
	if env == nil {
		return
	}
	if err := env.Stop(ctx); err != nil {
		ginkgo.Fail(err.Error())
	}
}

type sharedInfo struct{ Kind, Name string }
