package clusteroperator

import (
	"strings"
	"testing"

	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// A version not reached says why, when the ClusterOperator says it: its Progressing and Degraded.
func TestHaveOperandVersionFailureNamesProgressingAndDegraded(t *testing.T) {
	st := configv1.ClusterOperatorStatus{
		Versions: []configv1.OperandVersion{{Name: "operator", Version: "1.0.0"}},
		Conditions: []configv1.ClusterOperatorStatusCondition{
			{Type: configv1.OperatorProgressing, Status: configv1.ConditionFalse, Reason: "UpgradeBlocked", Message: "Update to 1.1.0 blocked: resource deletions in progress"},
			{Type: configv1.OperatorDegraded, Status: configv1.ConditionFalse, Reason: "AsExpected"},
			{Type: configv1.OperatorAvailable, Status: configv1.ConditionTrue, Reason: "AsExpected"},
		},
	}
	m := HaveOperandVersion("operator", "1.1.0")
	if ok, err := m.Match(st); ok || err != nil {
		t.Fatalf("Match = %v, %v; want false", ok, err)
	}
	msg := m.FailureMessage(st)
	for _, want := range []string{"operator=1.1.0", "{operator 1.0.0}", `Progressing=False reason="UpgradeBlocked" message="Update to 1.1.0 blocked`, "Degraded=False"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure message lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "Available") {
		t.Errorf("only Progressing and Degraded explain a version: %s", msg)
	}
}
