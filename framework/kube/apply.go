package kube

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// FieldOwner is the server-side-apply field manager of everything the framework applies.
const FieldOwner = client.FieldOwner("cleanup-e2e")

// Apply server-side-applies the objects in order (forcing ownership: the framework owns what it installs).
func Apply(ctx context.Context, c client.Client, objs ...*unstructured.Unstructured) error {
	for _, o := range objs {
		o = o.DeepCopy()
		o.SetManagedFields(nil)
		o.SetResourceVersion("")
		if err := c.Patch(ctx, o, client.Apply, FieldOwner, client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}

// WaitDeploymentAvailable waits until the Deployment reports Available=True for its current
// generation; timeout ≤ 0 is the deployment-available interval.
func WaitDeploymentAvailable(ctx context.Context, c client.Client, key types.NamespacedName, timeout time.Duration) error {
	err := intervals.Wait(ctx, intervals.DeploymentAvailable, func() (bool, string) {
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, key, dep); err != nil {
			return false, err.Error()
		}
		if dep.Status.ObservedGeneration >= dep.Generation && available(dep) {
			return true, ""
		}
		return false, fmt.Sprintf("generation %d observed %d, conditions %v", dep.Generation, dep.Status.ObservedGeneration, dep.Status.Conditions)
	}, intervals.Within(timeout))
	if err != nil {
		return fmt.Errorf("deployment %s not available: %w", key, err)
	}
	return nil
}

func available(dep *appsv1.Deployment) bool {
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
