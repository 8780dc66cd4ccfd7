package kube

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Two processes applying the same CRD race: the other one creates it between this one's read and
// create, then the API server writes its status between the next read and update. Both are retried
// from a fresh read, and the CRD ends with the spec applied.
func TestApplyCRDRetriesTheRacesItLoses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gr := schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	src := &apiextensionsv1.CustomResourceDefinition{}
	src.Name = "things.race.test"
	src.Spec.Group, src.Spec.Scope = "race.test", apiextensionsv1.NamespaceScoped
	creates, updates := 0, 0
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(MustScheme()).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if creates++; creates == 1 { // the other process was first
				other := src.DeepCopy()
				other.Spec.Group = "stale.test"
				if err := c.Create(ctx, other); err != nil {
					return err
				}
				return apierrors.NewAlreadyExists(gr, obj.GetName())
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if updates++; updates == 1 { // the API server wrote the status meanwhile
				return apierrors.NewConflict(gr, obj.GetName(), nil)
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	if err := applyCRD(ctx, c, src); err != nil {
		t.Fatalf("applyCRD gave up on a race it can win by reading again: %v", err)
	}
	got := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: src.Name}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Group != "race.test" || updates != 2 {
		t.Errorf("CRD group %q after %d updates; want race.test, applied by the second update", got.Spec.Group, updates)
	}
}
