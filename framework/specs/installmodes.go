package specs

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/cleanup-e2e/cleanup-e2e/framework/bundle"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// installModeOrder is the order specs run the modes in: the first is the mode of the specs that test
// one mode only (unset, disabled, pending, abort, upgrade), so the cheapest, most isolated mode wins.
var installModeOrder = []operatorsv1alpha1.InstallModeType{
	operatorsv1alpha1.InstallModeTypeOwnNamespace,
	operatorsv1alpha1.InstallModeTypeSingleNamespace,
	operatorsv1alpha1.InstallModeTypeMultiNamespace,
	operatorsv1alpha1.InstallModeTypeAllNamespaces,
}

// SupportedInstallModes are the install modes the CSV of the bundle in bundleDir marks supported, in
// installModeOrder: what OperandCleanupSpecInput.InstallModes defaults to, so an AllNamespaces-only
// operator is tested the only way OLM would install it.
func SupportedInstallModes(bundleDir string) ([]operatorsv1alpha1.InstallModeType, error) {
	b, err := bundle.Load(bundleDir)
	if err != nil {
		return nil, fmt.Errorf("OperandCleanupSpecInput.InstallModes is empty, so the bundle's CSV decides: %w", err)
	}
	supported := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, m := range b.CSV.Spec.InstallModes {
		supported[m.Type] = m.Supported
	}
	var out []operatorsv1alpha1.InstallModeType
	for _, m := range installModeOrder {
		if supported[m] {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bundle %s: CSV %s supports no install mode in spec.installModes (OLM cannot install it); "+
			"mark at least one of %v supported: true", bundleDir, b.CSV.Name, installModeOrder)
	}
	return out, nil
}

// ModeDecorators returns args (a spec's decorators, and its body if given: Ginkgo takes them in any
// order) plus the mode as a label, and for AllNamespaces cluster.LabelAPIScoped. Every spec that
// installs an operator in some mode takes its decorators here. An AllNamespaces spec is not Serial: a
// global operator's cleanup removes operands in every namespace, other specs' included, but only of
// the kinds its CSV owns, so its Installation holds those APIs (and those it requires) exclusively
// (Environment.APIs, on every provider) and the specs using them wait, while the others go on; as
// Serial it ran alone at the end of its suite, one process working and the others idle.
//
// It also runs first in its suite (SpecPriority): its exclusive hold waits for every spec holding those
// APIs, and queues their next ones behind it, so it costs least before the other runs' specs hold
// them. Drawn anywhere in a random order, an AllNamespaces case can wait most of a minute on kind,
// with every Ginkgo process idle, for a long spec of another run (e2e/kind's catalog spec) that holds
// the same APIs.
func ModeDecorators(mode operatorsv1alpha1.InstallModeType, args ...any) []any {
	out := append(append([]any{}, args...), Label(string(mode)))
	if mode == operatorsv1alpha1.InstallModeTypeAllNamespaces {
		out = append(out, Label(cluster.LabelAPIScoped), SpecPriority(apiScopedPriority))
	}
	return out
}

// apiScopedPriority is the SpecPriority of the specs that hold APIs exclusively (others have 0).
const apiScopedPriority = 1
