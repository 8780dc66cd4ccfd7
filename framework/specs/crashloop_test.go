package specs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cleanup-e2e/cleanup-e2e/framework/crashlog"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// A wait on the operator's work (a sample reconciled, operands finalized) stops once the operator
// crash-loops, naming the crash, instead of waiting out its timeout.
func TestAWaitOnTheOperatorStopsWhenItCrashLoops(t *testing.T) {
	csv := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "widget-operator.v0.1.0"}}
	csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs = []operatorsv1alpha1.StrategyDeploymentSpec{{Name: "widget-operator"}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "widget-operator"},
		Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable,
			Status: corev1.ConditionFalse, Reason: "CrashLoopBackOff",
			Message: crashlog.ExitedMessage(3, "last error: panic: assignment to entry in nil map")}}}}
	c := fake.NewClientBuilder().WithScheme(kube.MustScheme()).WithObjects(dep).Build()
	ctx := context.Background()
	rec := &recordingT{logf: t.Logf, name: "reconciled"}
	start := time.Now()
	failureOf(ctx, Case{Name: "reconciled", Run: func(ctx context.Context, tt T) {
		r := &Installation{t: tt, g: tt.Gomega(), c: c, csv: csv}
		crashing := r.crashLoopCheck(ctx)
		r.g.Eventually(func() error {
			if err := crashing(); err != nil {
				return err
			}
			return errors.New("Widget op/sample has no finalizer yet")
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "operator should reconcile Widget op/sample")
	}}, rec)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the wait took %s", d)
	}
	for _, w := range []string{"operator should reconcile Widget op/sample", "the operator of CSV op/widget-operator.v0.1.0 is crash-looping",
		"deployment op/widget-operator: operator exited 3 time(s), last error: panic: assignment to entry in nil map"} {
		if !strings.Contains(rec.failure, w) {
			t.Errorf("the failure lacks %q:\n%s", w, rec.failure)
		}
	}
}
