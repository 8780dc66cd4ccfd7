package olm

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

func TestUpstreamManifestsUseLocalImagesOnly(t *testing.T) {
	dir, err := UpstreamManifestDir()
	if err != nil {
		t.Fatalf("%v (the OLM module is downloaded by scripts/build-olm.sh, which make test runs first)", err)
	}
	objs, err := UpstreamManifests(dir, DefaultImages)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		data, _ := json.Marshal(o.Object)
		if strings.Contains(string(data), "quay.io/") {
			t.Errorf("%s %s still references an upstream image", o.GetKind(), o.GetName())
		}
		if o.GetKind() == "CatalogSource" {
			t.Errorf("the community CatalogSource %s must be left out", o.GetName())
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "Deployment", "ClusterServiceVersion", "OperatorGroup", "Namespace"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in OLM's quickstart manifests: %v", k, kinds)
		}
	}
	// With the CRDs the quickstart lacks added, the set is the one operator-framework/api ships (the
	// envtest tier installs those).
	upstream, err := upstreamCRDs(objs)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := crdNames(upstream), crdNames(ours); got != want {
		t.Errorf("quickstart CRDs %s, operator-framework/api CRDs %s", got, want)
	}
}

func TestRewriteString(t *testing.T) {
	imgs := Images{OLM: "local/olm:v1", OPM: "local/opm:v1"}
	for in, want := range map[string]string{
		"quay.io/operator-framework/olm@sha256:abc":                                           "local/olm:v1",
		"-configmapServerImage=quay.io/operator-framework/configmap-operator-registry:latest": "-configmapServerImage=local/opm:v1",
		"  quay.io/operator-framework/olm@sha256:abc":                                         "local/olm:v1",
		"--namespace":       "--namespace",
		"example.com/other": "example.com/other",
	} {
		if got := rewriteString(in, imgs); got != want {
			t.Errorf("rewriteString(%q) = %q, want %q", in, got, want)
		}
	}
}

func crdNames[T interface{ GetName() string }](items []T) string {
	var n []string
	for _, i := range items {
		n = append(n, i.GetName())
	}
	sort.Strings(n)
	return strings.Join(n, ",")
}
