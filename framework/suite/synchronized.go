package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/onsi/ginkgo/v2"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

// Setup is what a suite does with its cluster once the provider and the stack are up. Both hooks are
// optional.
type Setup struct {
	// Cluster runs once, after the stack, in process 1: the processes of a parallel run share one
	// cluster on every provider.
	Cluster func(ctx context.Context, env cluster.Environment)
	// Process runs in every Ginkgo process with the environment its specs use.
	Process func(ctx context.Context, env cluster.Environment)
}

// Environment registers the suite's set-up and tear-down (SynchronizedProvider) and returns what the
// spec libraries take: the environment of the calling Ginkgo process, once BeforeSuite ran. Use it at
// the top level:
//
//	var env = suite.Environment(testenv.Config{Name: "my-operator", Stack: stack.ForOperandCleanup(), ...})
func Environment(in testenv.Config, decorators ...any) func() cluster.Environment {
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
// suite using it has no BeforeSuite/AfterSuite of its own). Process 1 starts the cluster with its stack
// (testenv.Start) and runs setup.Cluster, then hands the cluster (testenv.Shared) to the other
// processes, which connect to it. On envtest too: its local runtime, in process 1, runs the operators
// every process installs, so N processes cost one control plane, kube-controller-manager and OLM, not
// N (Serial specs run in process 1, which can stop OLM). At the end the owner tears the stack
// down (skipped when the provider deletes the cluster anyway) and stops the provider, after every
// process is done. in.Name gets the process number; in.Log defaults to GinkgoWriter. decorators
// apply to the before-suite node; its NodeTimeout is intervals.SuiteSetup unless they set one. Use at
// the top level: var _ = ...
func SynchronizedProvider(in testenv.Config, setup Setup, decorators ...any) bool {
	if !slices.ContainsFunc(decorators, func(d any) bool { _, ok := d.(ginkgo.NodeTimeout); return ok }) {
		decorators = append(decorators, ginkgo.NodeTimeout(intervals.Get(intervals.SuiteSetup)))
	}
	var primary, own *testenv.Env // primary: process 1's shared cluster; own: this process's
	if in.Log.GetSink() == nil {
		in.Log = Logger()
	}
	start := func(ctx context.Context) *testenv.Env {
		routeLibraryLogs()
		in := in
		in.Name = fmt.Sprintf("%s-%d", in.Name, ginkgo.GinkgoParallelProcess())
		in.KeepCluster = in.KeepCluster || parallel() // the other processes still use it
		env, err := testenv.Start(ctx, in)
		if err != nil {
			ginkgo.Fail(err.Error())
		}
		if setup.Cluster != nil {
			setup.Cluster(ctx, env.Environment)
		}
		return env
	}
	shared := func() bool { return in.Shared() || parallel() }
	ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
		if !shared() {
			return nil
		}
		primary = start(ctx)
		data, _ := json.Marshal(primary.Share())
		return data
	}, func(ctx context.Context, data []byte) {
		var env cluster.Environment
		switch {
		case !shared():
			own = start(ctx)
			env = own.Environment
		case primary != nil: // process 1
			env = primary.Environment
		default:
			routeLibraryLogs()
			var info testenv.Shared
			if err := json.Unmarshal(data, &info); err != nil {
				ginkgo.Fail(fmt.Sprintf("decode the shared cluster from process 1: %v", err))
			}
			p, err := testenv.Connect(ctx, info, in.Log)
			if err != nil {
				ginkgo.Fail(fmt.Sprintf("connect to the %s cluster %s of process 1: %v", info.Kind, info.Name, err))
			}
			if env, err = testenv.Connected(p, in.Schemes...); err != nil {
				ginkgo.Fail(err.Error())
			}
			env.APIs = info.APILocker(in.Log)
			own = &testenv.Env{Environment: env} // stopping it only disconnects
		}
		if setup.Process != nil {
			setup.Process(ctx, env)
		}
	}, decorators...)
	ginkgo.SynchronizedAfterSuite(func(ctx context.Context) { stop(ctx, own) }, func(ctx context.Context) { stop(ctx, primary) })
	// A Serial spec acts on the whole cluster (e.g. stopping OLM): Ginkgo keeps this run's other specs
	// away from it, and on a shared cluster the run holds the cluster alone meanwhile, so other runs'
	// specs stay away too (Ginkgo runs Serial specs in process 1, which holds the run). An AllNamespaces
	// install only holds its operator's APIs exclusively (cluster.LabelAPIScoped, specs.Installation),
	// even in a spec also marked Serial.
	ginkgo.BeforeEach(func(ctx context.Context) {
		report := ginkgo.CurrentSpecReport()
		if env := primary; env != nil && report.IsSerial && !(env.APIs != nil && slices.Contains(report.Labels(), cluster.LabelAPIScoped)) {
			done, err := env.Alone(ctx, "Serial spec "+report.FullText())
			if err != nil {
				ginkgo.Fail(fmt.Sprintf("a Serial spec waits to have the shared cluster alone: %v", err))
			}
			ginkgo.DeferCleanup(done)
		}
	})
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

// parallel reports whether this is one of several Ginkgo processes.
func parallel() bool {
	cfg, _ := ginkgo.GinkgoConfiguration()
	return cfg.ParallelTotal > 1
}
