package specs_test

import (
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

// The spec trees the library declares, previewed (never run) by TestSpecTree: the Cluster is never
// asked for.
var (
	_ = specs.DescribeOperandCleanup(previewInput("global-only", allNamespacesOnlyBundle, allNamespacesOnlyBundle))
	_ = specs.DescribeOperandCleanup(previewInput("every-mode", bundles.Dir("widget-operator", "v0.1.0")))
	_ = specs.DescribeCleanupEnabled(previewInput("enabled-only", allNamespacesOnlyBundle))
)

func previewInput(name, bundleDir string, upgrades ...string) specs.OperandCleanupSpecInput {
	return specs.OperandCleanupSpecInput{
		Environment:       func() cluster.Environment { panic("a previewed spec tree never runs a spec") },
		Name:              name,
		BundleDir:         bundleDir,
		UpgradeBundleDirs: upgrades,
		Samples:           func(string) []*unstructured.Unstructured { return nil },
	}
}

var installModes = []string{
	string(operatorsv1alpha1.InstallModeTypeOwnNamespace), string(operatorsv1alpha1.InstallModeTypeSingleNamespace),
	string(operatorsv1alpha1.InstallModeTypeMultiNamespace), string(operatorsv1alpha1.InstallModeTypeAllNamespaces),
}

// TestSpecTree previews the declared specs (Ginkgo's dry run, no cluster) and checks each says its
// install mode as a label, is api-scoped and runs first exactly when that mode is AllNamespaces, and is never Serial;
// with InstallModes unset, the modes are those the bundle's CSV supports.
func TestSpecTree(t *testing.T) {
	report := PreviewSpecs("spec library tree")
	modes := map[string][]string{} // container → the mode of each of its specs
	for _, s := range report.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt {
			continue
		}
		var mode []string
		for _, l := range s.Labels() {
			if slices.Contains(installModes, l) {
				mode = append(mode, l)
			}
		}
		if len(mode) != 1 {
			t.Errorf("%q: install-mode labels %v, want exactly one", s.FullText(), mode)
			continue
		}
		global := mode[0] == string(operatorsv1alpha1.InstallModeTypeAllNamespaces)
		// A global cleanup acts on every namespace, but only on its kinds: its Installation holds them
		// exclusively (TestAnInstallationHoldsItsAPIsForTheWholeSpec); as Serial it would end its suite alone.
		if s.IsSerial {
			t.Errorf("%q runs in %s mode and is Serial: the library's specs lock their APIs instead", s.FullText(), mode[0])
		}
		if scoped := slices.Contains(s.Labels(), cluster.LabelAPIScoped); scoped != global {
			t.Errorf("%q runs in %s mode but labelled %s is %v: exactly the AllNamespaces cases hold their APIs exclusively",
				s.FullText(), mode[0], cluster.LabelAPIScoped, scoped)
		}
		// It runs first (its exclusive hold costs least before the other runs' specs hold its APIs).
		if first := s.SpecPriority > 0; first != global {
			t.Errorf("%q runs in %s mode but has SpecPriority %d: exactly the AllNamespaces cases run first", s.FullText(), mode[0], s.SpecPriority)
		}
		container := s.ContainerHierarchyTexts[0]
		modes[container] = append(modes[container], mode[0])
	}
	all := string(operatorsv1alpha1.InstallModeTypeAllNamespaces)
	own := string(operatorsv1alpha1.InstallModeTypeOwnNamespace)
	for container, want := range map[string][]string{
		// unset, disabled, enabled, pending, cap, abort, upgrade: all global, the only mode the CSV allows.
		"Operand cleanup of global-only": slices.Repeat([]string{all}, 7),
		// unset, disabled, pending, cap, abort in the first supported mode; enabled in each of the four;
		// the OperatorGroup dropping a target mid-cleanup in MultiNamespace (retarget.go).
		"Operand cleanup of every-mode": append(append(slices.Repeat([]string{own}, 5), installModes...),
			string(operatorsv1alpha1.InstallModeTypeMultiNamespace)),
		"Cleanup-enabled uninstall of enabled-only": {all},
	} {
		got := slices.Clone(modes[container])
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: spec modes %s, want %s", container, strings.Join(got, ","), strings.Join(want, ","))
		}
	}
}
