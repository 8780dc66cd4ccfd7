package olm

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// InClusterOperator is the olm-operator Deployment of OLM's upstream manifests (InstallUpstream).
var InClusterOperator = types.NamespacedName{Namespace: "olm", Name: "olm-operator"}

// StopInCluster scales the in-cluster olm-operator to zero and waits until none of its pods is left, so
// nothing reconciles CSVs or OperatorGroups any more.
func StopInCluster(ctx context.Context, c client.Client, timeout time.Duration) error {
	if err := scale(ctx, c, 0); err != nil {
		return err
	}
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, InClusterOperator, dep); err != nil {
		return err
	}
	sel := client.MatchingLabels(dep.Spec.Selector.MatchLabels)
	err := intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(InClusterOperator.Namespace), sel); err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pod(s) left", len(pods.Items))
	}, intervals.Within(timeout))
	if err != nil {
		return fmt.Errorf("olm-operator pods in %s still running after scaling %s to 0: %w", InClusterOperator.Namespace, InClusterOperator, err)
	}
	return nil
}

// StartInCluster scales the in-cluster olm-operator back to one replica and waits until OLM reconciles.
func StartInCluster(ctx context.Context, c client.Client, timeout time.Duration) error {
	if err := scale(ctx, c, 1); err != nil {
		return err
	}
	return WaitReconciling(ctx, c, timeout)
}

func scale(ctx context.Context, c client.Client, replicas int32) error {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: InClusterOperator.Namespace, Name: InClusterOperator.Name}}
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	if err := c.Patch(ctx, dep, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("scaling %s to %d: %w", InClusterOperator, replicas, err)
	}
	return nil
}
