package kube_test

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// The race behind `no matches for kind "Stuck"`, forced against a real apiserver: a client whose
// mapper looked the kind up before its CRD existed keeps that miss. Waiting for Established is not
// enough (the create fails, which shows the race is really there); after WaitCRDsUsable the same
// client creates the object.
func TestCRDUsableAfterTheMapperCachedAMiss(t *testing.T) {
	t.Parallel() // beside the unit tests: its control plane's start is most of the package's time
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cfg := startAPIServer(t)
	ctx := context.Background()
	c := clientCachingMisses(t, cfg)
	crd := raceCRD("stucks", "Stuck", nil)
	cr := &unstructured.Unstructured{}
	cr.SetAPIVersion(raceGroup + "/v1")
	cr.SetKind("Stuck")
	cr.SetNamespace("default")
	cr.SetName("s1")

	if _, err := c.RESTMapper().RESTMapping(cr.GroupVersionKind().GroupKind(), "v1"); !meta.IsNoMatchError(err) {
		t.Fatalf("before the CRD exists the kind must not map, got %v", err)
	}
	if err := c.Create(ctx, crd.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if err := intervals.Wait(ctx, intervals.CRDUsable, func() (bool, string) { return established(ctx, c, crd.Name) }); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, cr.DeepCopy()); !meta.IsNoMatchError(err) {
		t.Fatalf("the forced race did not happen: with only Established, create through the stale mapper should fail with no match, got %v", err)
	}

	if err := kube.WaitCRDsUsable(ctx, c, crd.Name); err != nil {
		t.Fatalf("WaitCRDsUsable: %v", err)
	}
	if err := c.Create(ctx, cr.DeepCopy()); err != nil {
		t.Fatalf("create %s right after WaitCRDsUsable: %v", cr.GetKind(), err)
	}
}

// clientCachingMisses is a client whose mapper (client-go's deferred discovery mapper over a memory
// cache) remembers a kind it did not find until it is Reset.
func clientCachingMisses(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	c, err := client.New(cfg, client.Options{Scheme: kube.MustScheme(), Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func established(ctx context.Context, c client.Client, name string) (bool, string) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return false, err.Error()
	}
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true, ""
		}
	}
	return false, "CRD " + name + " not Established yet"
}

func startAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	assets, err := toolchain.EnvtestAssets()
	if err != nil {
		t.Skipf("envtest binaries unavailable: %v", err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := toolchain.StartEnvtest(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}
