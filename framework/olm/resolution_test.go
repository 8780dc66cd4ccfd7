package olm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// The failure OLM gives when it resolved right after an upgrade, with the replaced CSV still in its
// snapshot, as OLM v0.46.0 words it on kind (it does not retry it).
const staleMessage = "constraints not satisfiable: @existing/ns//widget-operator.v0.1.0, @existing/ns//widget-operator.v0.2.0 and " +
	"fixtures/ns/alpha/widget-operator.v0.3.0 originate from package widget-operator, clusterserviceversion widget-operator.v0.1.0 " +
	"exists and is not referenced by a subscription, subscription widget-operator exists"

func TestStaleResolutionOnlyWhenTheNamedCSVIsGone(t *testing.T) {
	scheme := runtime.NewScheme()
	must(t, operatorsv1alpha1.AddToScheme(scheme))
	failed := func(reason, msg string) *operatorsv1alpha1.Subscription {
		sub := &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "widget-operator"}}
		sub.Status.SetCondition(operatorsv1alpha1.SubscriptionCondition{Type: operatorsv1alpha1.SubscriptionResolutionFailed,
			Status: corev1.ConditionTrue, Reason: reason, Message: msg})
		return sub
	}
	replaced := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "widget-operator.v0.1.0"}}
	for _, tc := range []struct {
		name     string
		sub      *operatorsv1alpha1.Subscription
		existing []client.Object
		want     []string
	}{
		{"replaced CSV gone: stale", failed("ConstraintsNotSatisfiable", staleMessage), nil, []string{"widget-operator.v0.1.0"}},
		{"replaced CSV still there: a real conflict", failed("ConstraintsNotSatisfiable", staleMessage), []client.Object{replaced}, nil},
		{"another unsatisfiable reason", failed("ConstraintsNotSatisfiable", "no operators found in channel beta"), nil, nil},
		{"an error that OLM retries itself", failed("ErrorPreventedResolution", staleMessage), nil, nil},
		{"no failure", &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.existing...).Build()
			got, err := olm.StaleResolution(context.Background(), c, tc.sub)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("StaleResolution = %v, want %v", got, tc.want)
			}
		})
	}
}

// Waiting on an upgrade's InstallPlan, a stale failure is nudged (the Subscription annotated, so that
// OLM resolves again) and the wait says so.
func TestApproveInstallPlanMakesOLMResolveAgainAfterAStaleFailure(t *testing.T) {
	scheme := runtime.NewScheme()
	must(t, operatorsv1alpha1.AddToScheme(scheme))
	sub := &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "widget-operator"}}
	sub.Status.SetCondition(operatorsv1alpha1.SubscriptionCondition{Type: operatorsv1alpha1.SubscriptionResolutionFailed,
		Status: corev1.ConditionTrue, Reason: "ConstraintsNotSatisfiable", Message: staleMessage})
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sub).WithStatusSubresource(sub).Build()
	_, err := olm.ApproveInstallPlan(context.Background(), c, sub, "widget-operator.v0.3.0", 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "OLM's resolution failed on CSVs already gone ([widget-operator.v0.1.0]); asked it to resolve again at") {
		t.Fatalf("the wait should say that it made OLM resolve again, got %v", err)
	}
	live := &operatorsv1alpha1.Subscription{}
	must(t, c.Get(context.Background(), client.ObjectKeyFromObject(sub), live))
	if live.Annotations[olm.ResolveNudgeAnnotation] == "" {
		t.Errorf("Subscription not annotated with %s: %v", olm.ResolveNudgeAnnotation, live.Annotations)
	}
}
