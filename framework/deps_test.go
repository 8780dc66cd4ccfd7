package framework_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A consumer's test binary links what the packages it imports link. Each front end must link only what
// its suites run: an operator repo testing operand cleanup (suite or e2eframework, specs, testenv,
// stack) never runs the payload applier, the CVO side's spec library or operator-registry's catalog
// code; a payload author's suite (deleteannotation) never runs OLM's spec library; and a Ginkgo suite
// does not link e2e-framework nor an e2e-framework one Ginkgo's suite wiring. framework/specs has its
// own, stricter check (no provider at all).
func TestConsumerFrontEndsLinkOnlyWhatTheyRun(t *testing.T) {
	const mod = "github.com/cleanup-e2e/cleanup-e2e/"
	operandCleanupSide := []string{
		mod + "pkg/payload",
		mod + "framework/deleteannotation",
		mod + "framework/components/payloadapplier",
		mod + "config/payload-applier",
		"github.com/operator-framework/operator-registry/",
		mod + "fixtures", // the fixture operators and their bundles are this repository's test data
		mod + "bundles",
	}
	for pkg, forbidden := range map[string][]string{
		"framework/suite":        append(operandCleanupSide, "sigs.k8s.io/e2e-framework/"),
		"framework/e2eframework": append(operandCleanupSide, mod+"framework/suite"),
		"framework/testenv":      append(operandCleanupSide, mod+"pkg/operandcleanup"),
		"framework/stack":        append(operandCleanupSide, mod+"pkg/operandcleanup"),
		"framework/deleteannotation": {
			mod + "pkg/operandcleanup", // the operand-cleanup controller comes with framework/specs
			mod + "framework/specs",
			mod + "framework/suite",
			mod + "framework/cluster/", // the providers come with the suite wiring, not with the spec library
			"github.com/operator-framework/operator-registry/",
		},
	} {
		t.Run(pkg, func(t *testing.T) {
			t.Parallel()
			for _, d := range deps(t, mod+pkg) {
				for _, f := range forbidden {
					if d == f || strings.HasPrefix(d, strings.TrimSuffix(f, "/")+"/") {
						t.Errorf("%s links %s (forbidden: %s); `go list -deps ./%s` and `go mod why` find the import "+
							"that brings it: move that code into a package of its own that only its users import", pkg, d, f, pkg)
					}
				}
			}
		})
	}
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}
