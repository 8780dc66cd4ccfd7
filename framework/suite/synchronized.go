package suite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/onsi/ginkgo/v2"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/existing"
	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

// Setup is what a suite does with its cluster once it is up.
type Setup struct {
	// Cluster runs once per cluster: in every process on envtest and existing (one provider per
	// process), only in process 1 on kind (one cluster shared by all processes). Install the systems
	// under test here.
	Cluster func(ctx context.Context, p cluster.Provider)
	// Process runs in every Ginkgo process with the provider it uses (build clients here).
	Process func(ctx context.Context, p cluster.Provider)
}

// SharedCluster reports whether CLEANUP_E2E_PROVIDER names a provider whose one cluster all parallel Ginkgo
// processes share (kind, existing), rather than one provider per process (envtest). On a shared
// cluster only process 1 installs (and later removes) what the run adds.
func SharedCluster() bool {
	p := envvar.Provider.Get()
	return p == "kind" || p == "existing"
}

// SynchronizedProvider registers the suite's SynchronizedBeforeSuite and SynchronizedAfterSuite (so a
// suite using it has no BeforeSuite/AfterSuite of its own): on kind, process 1 creates or reuses the
// cluster (NewProvider), runs setup.Cluster, and hands the cluster's name to the other processes,
// which connect to it; it stops the cluster after every process is done. Elsewhere every process
// starts its own provider. decorators (e.g. NodeTimeout) apply to the before-suite node.
// Use at the top level: var _ = suite.SynchronizedProvider(...).
func SynchronizedProvider(in ProviderInput, setup Setup, decorators ...any) bool {
	var primary, own cluster.Provider
	start := func(ctx context.Context) cluster.Provider {
		p, err := NewProvider(ctx, in)
		if err != nil {
			ginkgo.Fail(fmt.Sprintf("start provider %s=%s: %v", envvar.Provider.Name, envvar.Provider.Get(), err))
		}
		if setup.Cluster != nil {
			setup.Cluster(ctx, p)
		}
		return p
	}
	ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
		if !SharedCluster() {
			return nil
		}
		primary = start(ctx)
		data, _ := json.Marshal(sharedInfo{Kind: primary.Kind(), Name: primary.Name()})
		return data
	}, func(ctx context.Context, data []byte) {
		var p cluster.Provider
		switch {
		case !SharedCluster():
			own = start(ctx)
			p = own
		case primary != nil: // process 1
			p = primary
		default:
			var info sharedInfo
			if err := json.Unmarshal(data, &info); err != nil {
				ginkgo.Fail(fmt.Sprintf("decode the shared cluster from process 1: %v", err))
			}
			c, err := connectShared(ctx, info, in)
			if err != nil {
				ginkgo.Fail(fmt.Sprintf("connect to the %s cluster %s of process 1: %v", info.Kind, info.Name, err))
			}
			own, p = c, c
		}
		if setup.Process != nil {
			setup.Process(ctx, p)
		}
	}, decorators...)
	ginkgo.SynchronizedAfterSuite(func(ctx context.Context) {
		if own != nil {
			if err := own.Stop(ctx); err != nil {
				ginkgo.Fail(fmt.Sprintf("stop provider %s: %v", own.Name(), err))
			}
		}
	}, func(ctx context.Context) {
		if primary != nil {
			if err := primary.Stop(ctx); err != nil {
				ginkgo.Fail(fmt.Sprintf("stop provider %s: %v", primary.Name(), err))
			}
		}
	})
	return true
}

type sharedInfo struct{ Kind, Name string }

// connectShared connects a Ginkgo process other than 1 to the cluster process 1 set up.
func connectShared(ctx context.Context, info sharedInfo, in ProviderInput) (cluster.Provider, error) {
	routeLibraryLogs()
	if info.Kind == "existing" {
		// Installs nothing and removes nothing: it waits until process 1's installs are ready.
		opts := []existing.Option{existing.WithName(info.Name), existing.WithLogger(Logger().WithName(info.Name)),
			existing.WithContext(envvar.KubeContext.Get()), existing.WithWaitOnly()}
		if in.WithoutOLM {
			opts = append(opts, existing.WithoutOLM(), existing.WithoutOperandCleanup(), existing.WithClusterOperatorCRD())
		}
		return existing.New(ctx, opts...)
	}
	return connectKind(ctx, info.Name)
}
