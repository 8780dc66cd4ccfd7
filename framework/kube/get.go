package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Get reads the live state of obj by its kind, namespace and name. A kind the API server no longer
// serves (its CRD was deleted) answers NotFound: the object is gone with its CRD, which is what a
// wait for "gone" means.
func Get(ctx context.Context, c client.Client, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), live)
	if meta.IsNoMatchError(err) {
		return live, apierrors.NewNotFound(live.GroupVersionKind().GroupVersion().WithResource(live.GetKind()).GroupResource(), obj.GetName())
	}
	return live, err
}
