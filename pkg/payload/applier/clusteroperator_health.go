package applier

import (
	"fmt"
	"strings"
	"time"

	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// DefaultClusterOperatorDegradedGrace is how long the CVO lets a ClusterOperator stay degraded
// during an update before the update counts as failing (40 minutes from the start of its wait:
// convertErrorToProgressingForUpdateEffectFailAfterInterval in pkg/cvo/status.go).
const DefaultClusterOperatorDegradedGrace = 40 * time.Minute

// coVerdict is one look at a payload ClusterOperator, judged like the CVO's checkOperatorHealth
// (pkg/cvo/internal/operatorstatus.go).
type coVerdict struct {
	// done: the task succeeds. report: a warning to give with it (degraded at install).
	done   bool
	report string
	// fail: the task fails now, without waiting further.
	fail error
	// waiting says what is missing while neither done nor failed.
	waiting string
}

// judgeClusterOperator applies the CVO's rules in its order: not Available fails (here only an
// explicit Available=False fails at once; an operator that has not reported yet is waited for);
// degraded (any status but Degraded=False, as in the CVO) is only reported at install and, in
// update and reconcile, waited on until the grace since the start of the wait is over; versions
// not reached are waited on, except at install.
func judgeClusterOperator(expected []configv1.OperandVersion, co *configv1.ClusterOperator, mode Mode, waitingFor, grace time.Duration) coVerdict {
	name := co.Name
	if c := co.Status.FindCondition(configv1.OperatorAvailable); c == nil || c.Status != configv1.ConditionTrue {
		if c != nil && c.Status == configv1.ConditionFalse {
			return coVerdict{fail: &ClusterOperatorNotAvailableError{Name: name, Reason: c.Reason, Message: c.Message}}
		}
		return coVerdict{waiting: "not available yet (" + describeCondition(c, configv1.OperatorAvailable) + ")"}
	}
	if c := co.Status.FindCondition(configv1.OperatorDegraded); c == nil || c.Status != configv1.ConditionFalse {
		degraded := describeCondition(c, configv1.OperatorDegraded)
		switch {
		case mode == ModeInstall:
			return coVerdict{done: true, report: fmt.Sprintf("Cluster operator %s is degraded (%s); an install does not wait on it.", name, degraded)}
		case waitingFor >= grace:
			return coVerdict{fail: &ClusterOperatorDegradedError{Name: name, Condition: degraded, Grace: grace}}
		}
		return coVerdict{waiting: fmt.Sprintf("degraded (%s), waiting up to %s", degraded, grace)}
	}
	if undone := undoneVersions(expected, co.Status.Versions); len(undone) > 0 && mode != ModeInstall {
		return coVerdict{waiting: "updating versions: " + strings.Join(undone, ", ")}
	}
	return coVerdict{done: true}
}

func describeCondition(c *configv1.ClusterOperatorStatusCondition, t configv1.ClusterStatusConditionType) string {
	if c == nil {
		return "no " + string(t) + " condition"
	}
	s := fmt.Sprintf("%s=%s", c.Type, c.Status)
	if c.Reason != "" {
		s += " " + c.Reason
	}
	if c.Message != "" {
		s += ": " + c.Message
	}
	return s
}

// ClusterOperatorNotAvailableError: a payload ClusterOperator reports Available=False.
type ClusterOperatorNotAvailableError struct {
	Name, Reason, Message string
}

func (e *ClusterOperatorNotAvailableError) Error() string {
	return fmt.Sprintf("cluster operator %s is not available (Available=False %s: %s); its operator must report Available=True before the payload proceeds",
		e.Name, e.Reason, e.Message)
}

// ClusterOperatorDegradedError: a payload ClusterOperator stayed degraded past the grace of an update.
type ClusterOperatorDegradedError struct {
	Name, Condition string
	Grace           time.Duration
}

func (e *ClusterOperatorDegradedError) Error() string {
	return fmt.Sprintf("cluster operator %s is degraded (%s) for longer than %s; its operator must report Degraded=False before the payload proceeds",
		e.Name, e.Condition, e.Grace)
}
