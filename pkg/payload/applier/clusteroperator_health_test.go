package applier

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// The CVO's checkOperatorHealth rules (pkg/cvo/internal/operatorstatus.go), issue 13 item 3.
func TestJudgeClusterOperatorLikeTheCVO(t *testing.T) {
	const grace = 40 * time.Minute
	expected := []configv1.OperandVersion{{Name: "operator", Version: "2.0.0"}}
	co := func(version string, conds ...string) *configv1.ClusterOperator {
		c := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "foo"}}
		c.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: version}}
		for _, tc := range conds { // "Type=Status"
			typ, status, _ := strings.Cut(tc, "=")
			c.Status.Conditions = append(c.Status.Conditions, configv1.ClusterOperatorStatusCondition{
				Type: configv1.ClusterStatusConditionType(typ), Status: configv1.ConditionStatus(status), Reason: "Why", Message: "details"})
		}
		return c
	}
	var notAvailable *ClusterOperatorNotAvailableError
	var degraded *ClusterOperatorDegradedError
	for _, tc := range []struct {
		name       string
		co         *configv1.ClusterOperator
		mode       Mode
		waitingFor time.Duration
		done       bool
		report     bool
		fail       interface{}
		waiting    string
	}{
		{name: "Available=False fails an update", co: co("2.0.0", "Available=False", "Degraded=False"), mode: ModeUpdate, fail: &notAvailable},
		{name: "Available=False fails an install", co: co("1.0.0", "Available=False"), mode: ModeInstall, fail: &notAvailable},
		{name: "no Available condition yet is waited for", co: co("2.0.0"), mode: ModeUpdate, waiting: "not available yet (no Available condition)"},
		{name: "Available=Unknown is waited for", co: co("2.0.0", "Available=Unknown"), mode: ModeReconcile, waiting: "not available yet (Available=Unknown Why: details)"},
		{name: "degraded within the grace is waited on in an update", co: co("2.0.0", "Available=True", "Degraded=True"), mode: ModeUpdate,
			waitingFor: grace - time.Second, waiting: "degraded (Degraded=True Why: details), waiting up to 40m0s"},
		{name: "degraded past the grace fails an update", co: co("2.0.0", "Available=True", "Degraded=True"), mode: ModeUpdate, waitingFor: grace, fail: &degraded},
		{name: "degraded past the grace fails a reconcile", co: co("2.0.0", "Available=True", "Degraded=True"), mode: ModeReconcile, waitingFor: grace, fail: &degraded},
		{name: "no Degraded condition counts as degraded, as in the CVO", co: co("2.0.0", "Available=True"), mode: ModeUpdate,
			waiting: "degraded (no Degraded condition), waiting up to 40m0s"},
		{name: "degraded is only reported at install", co: co("1.0.0", "Available=True", "Degraded=True"), mode: ModeInstall, waitingFor: 2 * grace, done: true, report: true},
		{name: "versions not reached are waited on in an update", co: co("1.0.0", "Available=True", "Degraded=False"), mode: ModeUpdate,
			waiting: "updating versions: operator from 1.0.0 to 2.0.0"},
		{name: "versions are not required at install", co: co("1.0.0", "Available=True", "Degraded=False"), mode: ModeInstall, done: true},
		{name: "available, not degraded, at the versions: done", co: co("2.0.0", "Available=True", "Degraded=False", "Progressing=True"), mode: ModeUpdate, done: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeClusterOperator(expected, tc.co, tc.mode, tc.waitingFor, grace)
			if v.done != tc.done || (v.report != "") != tc.report || v.waiting != tc.waiting {
				t.Fatalf("got done=%v report=%q waiting=%q, want done=%v report=%v waiting=%q", v.done, v.report, v.waiting, tc.done, tc.report, tc.waiting)
			}
			if tc.fail == nil && v.fail != nil {
				t.Fatalf("unexpected failure: %v", v.fail)
			}
			if tc.fail != nil && (v.fail == nil || !errors.As(v.fail, tc.fail)) {
				t.Fatalf("want a %T failure, got %v", tc.fail, v.fail)
			}
			if v.fail != nil && !strings.Contains(v.fail.Error(), "cluster operator foo") {
				t.Fatalf("the error must name the cluster operator: %v", v.fail)
			}
		})
	}
}
