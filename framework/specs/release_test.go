package specs

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// release removes the case's own samples, finalizers included, and nothing else: an object recreated
// under a sample's name (another UID) keeps its finalizers and is not deleted.
func TestReleaseTouchesOnlyTheCasesOwnSamples(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	own := sample("own", "uid-own")
	recreated := sample("recreated", "uid-now")
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(own.DeepCopy(), recreated.DeepCopy()).Build()

	created := recreated.DeepCopy()
	created.SetUID("uid-then") // what the case created under that name, since replaced
	ops := &operands{c: c, items: []*unstructured.Unstructured{own, created, sample("never-created", "")}}
	ops.release(ctx, t.Logf)

	if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "own"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the case's own sample, held by its uninstalled operator's finalizer, must be gone: %v", err)
	}
	live := &corev1.ConfigMap{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "recreated"}, live); err != nil {
		t.Fatalf("an object recreated under a sample's name must stay: %v", err)
	}
	if live.DeletionTimestamp != nil || len(live.Finalizers) != 1 {
		t.Errorf("an object recreated under a sample's name must be untouched, got deletion %v, finalizers %v",
			live.DeletionTimestamp, live.Finalizers)
	}
}

func sample(name, uid string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetUID(types.UID(uid))
	u.SetFinalizers([]string{"example.com/operator-finalizer"})
	return u
}
