package specs

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
)

// The APIs a case locks are the kinds its CSVs own (what an AllNamespaces cleanup of it deletes) and
// its samples' kinds (what another operator's could delete), without the core group's.
func TestUsedAPIsAreTheOwnedKindsAndTheSamplesKinds(t *testing.T) {
	sample := func(apiVersion, kind string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		return u
	}
	in := OperandCleanupSpecInput{BundleDir: bundles.Dir("widget-operator", "v0.1.0"),
		Samples: func(string) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{sample("v1", "ConfigMap"), sample("cache.example.com/v1alpha1", "Memcached")}
		}}
	got, err := usedAPIs(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"widget.fixtures.cleanup-e2e.io", "widgetclass.fixtures.cleanup-e2e.io", "memcached.cache.example.com"} {
		if !slices.Contains(got, want) {
			t.Errorf("used APIs %v, want %s among them", got, want)
		}
	}
	for _, a := range got {
		if !strings.Contains(a, ".") || a != strings.ToLower(a) || strings.HasPrefix(a, "configmap") {
			t.Errorf("used API %q: want kind.group in lower case, no core kinds", a)
		}
	}
}
