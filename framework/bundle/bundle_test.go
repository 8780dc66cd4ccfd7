package bundle_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/framework/bundle"
)

func TestLoad(t *testing.T) {
	b, err := bundle.Load(bundles.Dir("widget-operator", "v0.2.0"))
	if err != nil {
		t.Fatal(err)
	}
	if b.CSV.Name != "widget-operator.v0.2.0" || b.CSV.Spec.Replaces != "widget-operator.v0.1.0" {
		t.Errorf("CSV %s replaces %q", b.CSV.Name, b.CSV.Spec.Replaces)
	}
	if b.Package() != "widget-operator" || b.DefaultChannel() != "alpha" || !slices.Equal(b.Channels(), []string{"alpha"}) {
		t.Errorf("annotations = %v", b.Annotations)
	}
	var crds []string
	for _, c := range b.CRDs {
		crds = append(crds, c.Name)
	}
	slices.Sort(crds)
	if want := []string{"widgetclasses.fixtures.cleanup-e2e.io", "widgets.fixtures.cleanup-e2e.io"}; !slices.Equal(crds, want) {
		t.Errorf("CRDs = %v, want %v", crds, want)
	}
	if len(b.Others) != 0 {
		t.Errorf("unexpected manifests: %v", b.Others)
	}
}

func TestLoadRejectsBundleWithoutCSV(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"manifests", "metadata"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "metadata", "annotations.yaml"), []byte("annotations: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
	if err := os.WriteFile(filepath.Join(dir, "manifests", "cm.yaml"), []byte("---\n"+cm+"---\n"+cm), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.Load(dir); err == nil || !strings.Contains(err.Error(), "no ClusterServiceVersion") {
		t.Errorf("err = %v, want one saying the CSV is missing", err)
	}
}
