package specs

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/operandcleanup"
)

func TestPendingListCapIsReadFromTheControllersArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"flag=value", []string{"--leader-elect", "--max-pending-listed=10"}, 10},
		{"flag value", []string{"--max-pending-listed", "7", "--leader-elect"}, 7},
		{"one dash", []string{"-max-pending-listed=3"}, 3},
		{"the last one wins", []string{"--max-pending-listed=100", "--max-pending-listed=10"}, 10},
		{"absent: the controller's default", []string{"--leader-elect"}, operandcleanup.DefaultMaxPendingListed},
		{"a longer flag is another flag", []string{"--max-pending-listed-extra=5"}, operandcleanup.DefaultMaxPendingListed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := capFromArgs("operand-cleanup/operand-cleanup", []corev1.Container{{Name: "controller", Args: tc.args}})
			if err != nil || got != tc.want {
				t.Fatalf("capFromArgs(%q) = %d, %v; want %d", tc.args, got, err, tc.want)
			}
		})
	}
}

func TestABadPendingListCapNamesTheDeploymentAndTheFlag(t *testing.T) {
	for _, args := range [][]string{{"--max-pending-listed=ten"}, {"--max-pending-listed=0"}, {"--max-pending-listed"}} {
		_, err := capFromArgs("operand-cleanup/operand-cleanup", []corev1.Container{{Name: "controller", Args: args}})
		if err == nil {
			t.Fatalf("capFromArgs(%q) did not fail", args)
		}
		for _, want := range []string{"Deployment operand-cleanup/operand-cleanup", "container controller", "--max-pending-listed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("capFromArgs(%q): %q does not name %q", args, err, want)
			}
		}
	}
}
