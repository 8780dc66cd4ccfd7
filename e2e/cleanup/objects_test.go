package cleanup

import (
	"context"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// toUnstructured converts a typed fixture object for the spec library, which works on any operator.
func toUnstructured(obj client.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{Object: m}
	gvks, _, err := k8s.Scheme().ObjectKinds(obj)
	Expect(err).NotTo(HaveOccurred())
	u.SetGroupVersionKind(gvks[0])
	return u
}

// get reads obj's live state into it.
func get(ctx context.Context, obj client.Object) func() (client.Object, error) {
	return func() (client.Object, error) { return obj, k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj) }
}
