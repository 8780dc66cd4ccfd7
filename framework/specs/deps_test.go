package specs_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// An operator repo that imports the spec library links what it imports. The library must stay
// free of the providers' heavy dependencies (kind and its Docker code), of operator-registry (catalogs,
// which the spec library never reads) and of the payload applier (the CVO side), or every operator's
// test binary grows by hundreds of packages it never runs.
func TestSpecLibraryLinksNoProviderCatalogOrApplier(t *testing.T) {
	forbidden := []string{
		"sigs.k8s.io/kind/",
		"github.com/operator-framework/operator-registry/",
		"github.com/cleanup-e2e/cleanup-e2e/pkg/payload",
		"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/", // providers: envtest, kind, existing
		"github.com/cleanup-e2e/cleanup-e2e/framework/suite",
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/cleanup-e2e/cleanup-e2e/framework/specs").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, d := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(d, f) {
				t.Errorf("framework/specs links %s (forbidden: %s...); run `go list -deps ./framework/specs` and "+
					"`go mod why -m` to find the import that brings it, and move that code out of the spec library", d, f)
			}
		}
	}
	t.Logf("framework/specs links %d packages", len(deps))
}
