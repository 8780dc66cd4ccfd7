// Package footprint says what the e2e suites leave on a cluster on purpose: the fixture operators'
// CRDs (OLM keeps CRDs on uninstall, and specs running in parallel share them) and widget-operator's
// records namespace. The stack deletes them at the end of a suite if the run created them (on a cluster
// that outlives the run: existing, a kept kind cluster), so that a run leaves the cluster as it found it.
package footprint

import (
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
)

// Footprint is the suites' footprint (stack.Components.Footprint).
func Footprint() stack.Footprint {
	return stack.Footprint{
		CRDGroups:  []string{fixturesv1alpha1.GroupVersion.Group},
		Namespaces: []string{widget.DefaultRecordsNamespace},
	}
}
