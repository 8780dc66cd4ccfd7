package specs

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// release is a case's last word on its own samples, once its operator is uninstalled: each sample
// still there is deleted and, when the uninstalled operator's finalizers hold it, they are removed —
// nobody is left to run them. Samples stay on purpose in the kept cases, and outside the cleanup's
// scope in the others (a cluster-scoped sample of an OwnNamespace operator, which the operator still
// finalizes). Left alone, they keep their namespace Terminating and their CRD undeletable on a shared
// cluster, and whether a later AllNamespaces cleanup happens to sweep them depends on the order the
// specs ran in (a kind run's teardown failed on two such WidgetClasses).
//
// Safety: only objects this case created are touched, each by the UID it got at creation (a
// recreated object of the same name is someone else's); it runs after the case's CSV is gone (see
// forceUninstall), and finalizers are removed with the object's resourceVersion as precondition.
func (o *operands) release(ctx context.Context, logf func(string, ...any)) {
	for _, it := range o.items {
		if err := o.releaseOne(ctx, it); err != nil {
			logf("cleanup: release sample %s %s: %v", it.GetKind(), describeKey(it), err)
		}
	}
}

func (o *operands) releaseOne(ctx context.Context, it *unstructured.Unstructured) error {
	uid := it.GetUID()
	if uid == "" {
		return nil // never created
	}
	for attempt := 0; ; attempt++ {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(it.GroupVersionKind())
		err := o.c.Get(ctx, types.NamespacedName{Namespace: it.GetNamespace(), Name: it.GetName()}, live)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if live.GetUID() != uid { // another object by now: not ours
			return nil
		}
		if live.GetDeletionTimestamp() == nil {
			err := o.c.Delete(ctx, live.DeepCopy(), client.Preconditions{UID: &uid})
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return nil
			}
			if err != nil {
				return err
			}
			continue // read what the delete left
		}
		if len(live.GetFinalizers()) == 0 {
			return nil
		}
		patch := client.MergeFromWithOptions(live.DeepCopy(), client.MergeFromWithOptimisticLock{})
		live.SetFinalizers(nil)
		err = o.c.Patch(ctx, live, patch)
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("remove the finalizers its uninstalled operator left: %w", err)
		case attempt >= 3:
			return fmt.Errorf("it kept changing while its finalizers were being removed")
		}
	}
}
