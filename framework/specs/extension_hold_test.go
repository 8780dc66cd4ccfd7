package specs

import (
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// The spec library reads the controller's hold without linking the controller.
func TestHoldMatchesTheController(t *testing.T) {
	for _, c := range [][2]string{
		{uninstallFinalizer, extensioncleanup.Finalizer},
		{uninstallCondition, extensioncleanup.ConditionType},
		{holderClusterRole, extensioncleanup.DefaultHolderName},
		{"Holding", extensioncleanup.ReasonHolding},
	} {
		if c[0] != c[1] {
			t.Errorf("framework/specs says %q, pkg/extensioncleanup %q", c[0], c[1])
		}
	}
}
