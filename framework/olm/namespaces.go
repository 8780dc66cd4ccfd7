package olm

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// EnsureNamespaces creates the namespaces that do not exist yet. One that is still terminating (a
// previous spec or run deleted it) is waited out and created anew: the apiserver refuses new objects
// in a terminating namespace, so accepting it as "already there" only moved the failure to the
// install that followed.
func EnsureNamespaces(ctx context.Context, c client.Client, names ...string) error {
	for _, n := range names {
		if err := ensureNamespace(ctx, c, n); err != nil {
			return err
		}
	}
	return nil
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	var createErr error
	err := intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if kube.CutByDeadline(ctx, err) {
			// The caller's context (its deadline) ended the request, not the API server: the error to
			// report is the state seen before (still terminating, and what holds it), which Poll keeps.
			return false, fmt.Sprintf("create namespace %s: %v", name, err)
		}
		if createErr = client.IgnoreAlreadyExists(err); createErr != nil {
			return true, "" // not something waiting fixes
		}
		live := &corev1.Namespace{}
		switch err := c.Get(ctx, client.ObjectKey{Name: name}, live); {
		case apierrors.IsNotFound(err):
			return false, fmt.Sprintf("namespace %s was removed just now; creating it again", name)
		case err != nil:
			return false, fmt.Sprintf("read namespace %s: %v", name, err)
		case live.DeletionTimestamp != nil:
			return false, fmt.Sprintf("namespace %s is still terminating (finalizers %v %v, conditions %v): "+
				"is the namespace controller running, and does something hold a finalizer in it?",
				name, live.Finalizers, live.Spec.Finalizers, live.Status.Conditions)
		}
		return true, ""
	})
	if createErr != nil {
		return fmt.Errorf("create namespace %s: %w", name, createErr)
	}
	return err
}
