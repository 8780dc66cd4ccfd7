package olmv1

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// Uninstall is a deleted ClusterExtension and what its deletion is judged on: Judge gives the CRs
// their verdicts once it has settled (nothing can change them any more).
type Uninstall struct {
	ClusterExtension *unstructured.Unstructured
	// Deployment is the extension's operator (the CSV's deployment name in the install namespace).
	Deployment types.NamespacedName
	CRs        []*unstructured.Unstructured
	// OperatorRunning says whether the operator may still run once its Deployment is gone, and why:
	// envtest's local runtime not stopped yet, a Pod on kind not gone yet.
	OperatorRunning func(context.Context) (bool, string)
}

// Settled: the ClusterExtension and the operator's Deployment gone, the operator no longer running
// (nothing can finalize a CR after that), and every CR gone or pending deletion; why says what is not.
func (u Uninstall) Settled(ctx context.Context, c client.Client) (bool, string) {
	ce := u.ClusterExtension
	if err := c.Get(ctx, client.ObjectKeyFromObject(ce), ce.DeepCopy()); !apierrors.IsNotFound(err) {
		return false, fmt.Sprintf("ClusterExtension %s still there (error %v)", ce.GetName(), err)
	}
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, u.Deployment, dep); !apierrors.IsNotFound(err) {
		return false, fmt.Sprintf("Deployment %s still there (deletionTimestamp %v, finalizers %v, error %v)", u.Deployment, dep.DeletionTimestamp, dep.Finalizers, err)
	}
	if u.OperatorRunning != nil {
		if running, why := u.OperatorRunning(ctx); running {
			return false, why
		}
	}
	for _, cr := range u.CRs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(cr.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(cr), live)
		if err == nil && live.GetDeletionTimestamp() == nil {
			return false, fmt.Sprintf("%s %s/%s not deleted yet", cr.GetKind(), cr.GetNamespace(), cr.GetName())
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err.Error()
		}
	}
	return true, "settled"
}

// WaitSettled waits until Settled, passing logf each change with its time since deleted: the timeline.
func (u Uninstall) WaitSettled(ctx context.Context, c client.Client, deleted time.Time, logf func(format string, args ...any)) error {
	last := ""
	err := intervals.Wait(ctx, intervals.GarbageCollecting, func() (bool, string) {
		done, why := u.Settled(ctx, c)
		if why != last {
			logf("+%s %s", time.Since(deleted).Round(time.Millisecond), why)
			last = why
		}
		return done, why
	})
	if err != nil {
		return fmt.Errorf("the uninstall to settle after deleting ClusterExtension %s: %w", u.ClusterExtension.GetName(), err)
	}
	return nil
}
