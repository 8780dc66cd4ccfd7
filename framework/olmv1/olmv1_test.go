package olmv1

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// scripts/build-olmv1.sh builds what this package runs.
func TestVersionMatchesScripts(t *testing.T) {
	f, err := os.Open(filepath.Join(toolchain.RepoRoot(), "scripts", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && k == "OLMV1_VERSION" {
			if got := strings.Fields(v)[0]; got != Version {
				t.Fatalf("scripts/versions.env OLMV1_VERSION=%s, framework/olmv1 says %s", got, Version)
			}
			return
		}
	}
	t.Fatal("scripts/versions.env has no OLMV1_VERSION")
}

// The catalog image holds bundles/catalog under /configs with the configs label, its bundle
// references pointing at the registry, and each of those references is pushed.
func TestRegistryServesFixtures(t *testing.T) {
	r, err := StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	ctx := context.Background()
	if err := r.PushFixtures(ctx); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.CatalogRef(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Labels[catalogConfigsLabel]; got != "/configs" {
		t.Errorf("catalog label %s=%q, want /configs", catalogConfigsLabel, got)
	}
	bundle := r.BundleRef("widget-operator", "v0.1.0")
	if !strings.HasPrefix(bundle, r.Host+"/bundle/") {
		t.Errorf("BundleRef = %s, want it in %s/bundle/", bundle, r.Host)
	}
	bref, err := name.ParseReference(bundle, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	bimg, err := remote.Image(bref, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("bundle %s: %v", bundle, err)
	}
	bcf, err := bimg.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := bcf.Config.Labels[bundleMediaTypeLabel]; got != "registry+v1" {
		t.Errorf("bundle label %s=%q, want registry+v1", bundleMediaTypeLabel, got)
	}
}
