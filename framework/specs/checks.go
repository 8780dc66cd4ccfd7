package specs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// Check is what OperandCleanupSpecInput.Reconciled and Finalized hold: nil once the operator has done
// its part for the sample, else an error saying what is missing (the specs quote the last one).
type Check = func(ctx context.Context, c client.Client, sample *unstructured.Unstructured) error

// AllOf passes when every check passes; it reports the first that does not.
func AllOf(checks ...Check) Check {
	return func(ctx context.Context, c client.Client, sample *unstructured.Unstructured) error {
		for _, check := range checks {
			if err := check(ctx, c, sample); err != nil {
				return err
			}
		}
		return nil
	}
}

// HasCondition passes once the sample's status.conditions has condType with status "True" — a
// condition the operator sets when it has done its work, not merely seen the sample.
func HasCondition(condType string) Check {
	return func(ctx context.Context, c client.Client, sample *unstructured.Unstructured) error {
		live, err := kube.Get(ctx, c, sample)
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
		var seen []string
		for _, raw := range conds {
			cond, _ := raw.(map[string]any)
			t, _ := cond["type"].(string)
			s, _ := cond["status"].(string)
			if t == condType && s == "True" {
				return nil
			}
			seen = append(seen, fmt.Sprintf("%s=%s (%v)", t, s, cond["message"]))
		}
		if len(seen) == 0 {
			seen = []string{"none"}
		}
		return fmt.Errorf("%s %s has no condition %s=True; its conditions: %s", sample.GetKind(), describeKey(sample), condType,
			strings.Join(seen, "; "))
	}
}

// Owns passes once an object of kind gvk in the sample's namespace has an ownerReference to the sample
// (the operator made something for it: a Deployment, a ConfigMap...).
func Owns(gvk schema.GroupVersionKind) Check {
	return func(ctx context.Context, c client.Client, sample *unstructured.Unstructured) error {
		live, err := kube.Get(ctx, c, sample)
		if err != nil {
			return err
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(sample.GetNamespace())); err != nil {
			return fmt.Errorf("list %s in namespace %s: %w", gvk.Kind, sample.GetNamespace(), err)
		}
		for _, o := range list.Items {
			for _, ref := range o.GetOwnerReferences() {
				if ref.UID == live.GetUID() {
					return nil
				}
			}
		}
		return fmt.Errorf("no %s in namespace %q is owned by %s %s (the operator made nothing for it yet)",
			gvk.Kind, sample.GetNamespace(), sample.GetKind(), describeKey(sample))
	}
}

// Gone passes once the object of kind gvk that name gives for the sample does not exist — for
// Finalized: what the operator's finalizer must remove (an object garbage collection cannot reach,
// e.g. a cluster-scoped one made for a namespaced sample).
func Gone(gvk schema.GroupVersionKind, name func(sample *unstructured.Unstructured) types.NamespacedName) Check {
	return func(ctx context.Context, c client.Client, sample *unstructured.Unstructured) error {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(gvk)
		key := name(sample)
		o.SetNamespace(key.Namespace)
		o.SetName(key.Name)
		_, err := kube.Get(ctx, c, o)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		where := key.Name
		if key.Namespace != "" {
			where = key.String()
		}
		return errors.New(gvk.Kind + " " + where + " still exists: the finalizer of " + sample.GetKind() + " " +
			describeKey(sample) + " should have removed it")
	}
}
