// Package hold keeps an object from being deleted for as long as a spec wants: it puts a finalizer
// of its own on the object and takes it off again. Specs use it to keep an operand pending deletion
// whatever its operator does, or a payload object in the middle of its delete.
//
// Put and Release read the object live and patch its finalizers with a resourceVersion
// precondition, retrying on conflicts, so they never drop a finalizer an operator added meanwhile.
package hold

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// Finalizer is the finalizer a hold puts on an object.
const Finalizer = "cleanup-e2e.io/hold"

// Put adds Finalizer to obj (its kind, namespace and name are used). An object already gone is an
// error: a spec holding it expected it to be there.
func Put(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	return editFinalizers(ctx, c, obj, false, func(f []string) []string {
		if slices.Contains(f, Finalizer) {
			return f
		}
		return append(f, Finalizer)
	})
}

// Release removes Finalizer from obj; an object already gone is not an error.
func Release(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	return editFinalizers(ctx, c, obj, true, func(f []string) []string {
		return slices.DeleteFunc(f, func(x string) bool { return x == Finalizer })
	})
}

func editFinalizers(ctx context.Context, c client.Client, obj *unstructured.Unstructured, goneOK bool, edit func([]string) []string) error {
	what := fmt.Sprintf("%s %s", obj.GetKind(), client.ObjectKeyFromObject(obj))
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := kube.Get(ctx, c, obj) // a kind no longer served is gone too
		if err != nil {
			return err
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"finalizers": edit(slices.Clone(live.GetFinalizers())), "resourceVersion": live.GetResourceVersion()}})
		if err != nil {
			return err
		}
		return c.Patch(ctx, live, client.RawPatch(types.MergePatchType, patch))
	})
	if goneOK {
		err = client.IgnoreNotFound(err)
	}
	if err != nil {
		return fmt.Errorf("update the finalizers of %s: %w", what, err)
	}
	return nil
}
