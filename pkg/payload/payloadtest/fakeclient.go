package payloadtest

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// FakeClient is an in-memory cluster for unit tests of the applier: client-go's kinds and
// ClusterOperator, each with its real scope, so no API server is needed. Deletes honour
// finalizers (the object gets a deletionTimestamp and stays until they are removed).
//
// Server-side apply is simulated by ApplyAsUpdate: the fake's own apply needs its field-managed
// object tracker, which rebuilds a REST mapper on every write (tens of milliseconds). funcs, if given, intercept calls (e.g.
// to inject an error); their Apply, if nil, is ApplyAsUpdate.
func FakeClient(funcs ...interceptor.Funcs) client.WithWatch {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = configv1.AddToScheme(s)
	var f interceptor.Funcs
	if len(funcs) > 0 {
		f = funcs[0]
	}
	if f.Apply == nil {
		f.Apply = ApplyAsUpdate
	}
	// A plain object tracker: the field-managed one rebuilds a REST mapper on every write.
	tracker := clienttesting.NewObjectTracker(s, serializer.NewCodecFactory(s).UniversalDecoder())
	return fake.NewClientBuilder().WithScheme(s).WithRESTMapper(testrestmapper.TestOnlyStaticRESTMapper(s)).
		WithObjectTracker(tracker).WithStatusSubresource(&configv1.ClusterOperator{}).WithInterceptorFuncs(f).Build()
}

// ApplyAsUpdate is a forced apply by the only field manager: the object is created, or its fields
// other than metadata and status are replaced; labels and annotations are replaced and finalizers
// added (a terminating object keeps its deletionTimestamp).
func ApplyAsUpdate(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, _ ...client.ApplyOption) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	applied := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &applied.Object); err != nil {
		return err
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(applied.GroupVersionKind())
	err = c.Get(ctx, client.ObjectKeyFromObject(applied), live)
	if apierrors.IsNotFound(err) {
		return c.Create(ctx, applied)
	}
	if err != nil {
		return err
	}
	for k, v := range applied.Object {
		if k != "metadata" && k != "status" {
			live.Object[k] = v
		}
	}
	live.SetLabels(applied.GetLabels())
	live.SetAnnotations(applied.GetAnnotations())
	finalizers := live.GetFinalizers()
	for _, f := range applied.GetFinalizers() {
		if !contains(finalizers, f) {
			finalizers = append(finalizers, f)
		}
	}
	live.SetFinalizers(finalizers)
	return c.Update(ctx, live)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
