package payloadtest

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// FakeClient is an in-memory cluster for unit tests of the applier: client-go's kinds and
// ClusterOperator, each with its real scope, so no API server is needed. Deletes honour
// finalizers (the object gets a deletionTimestamp and stays until they are removed). As an API
// server does (and controller-runtime's fake does not), a created object gets a new UID and a
// creationTimestamp, and a Delete with a UID precondition is refused with a Conflict when the
// object's UID differs: the applier's safety against re-created objects rests on both.
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
	inner := fake.NewClientBuilder().WithScheme(s).WithRESTMapper(testrestmapper.TestOnlyStaticRESTMapper(s)).
		WithObjectTracker(tracker).WithStatusSubresource(&configv1.ClusterOperator{}).Build()
	// The caller's funcs wrap the server's behaviour, so an injected Delete still meets the
	// precondition when it calls through.
	return interceptor.NewClient(interceptor.NewClient(inner, serverFuncs()), f)
}

// serverFuncs adds what an API server does and the fake does not: UIDs and creation timestamps on
// create, and the UID precondition of a Delete.
func serverFuncs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetUID() == "" {
				obj.SetUID(uuid.NewUUID())
			}
			if created := obj.GetCreationTimestamp(); created.IsZero() {
				obj.SetCreationTimestamp(metav1.Now())
			}
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			do := &client.DeleteOptions{}
			do.ApplyOptions(opts)
			if do.Preconditions != nil && do.Preconditions.UID != nil {
				cur, ok := obj.DeepCopyObject().(client.Object)
				if !ok {
					return fmt.Errorf("fake client: %T is not a client.Object", obj)
				}
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
					return err
				}
				if want := *do.Preconditions.UID; cur.GetUID() != want {
					gvk, err := apiutil.GVKForObject(obj, c.Scheme())
					if err != nil {
						return err
					}
					// The API server's own words (k8s.io/apiserver pkg/storage/interfaces.go, Preconditions.Check).
					return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, obj.GetName(),
						fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", want, cur.GetUID()))
				}
			}
			return c.Delete(ctx, obj, opts...)
		},
	}
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
