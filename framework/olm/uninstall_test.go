package olm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// Uninstall deletes the CSV it installed, not one re-created under its name since (someone else's
// install): the Delete carries the UID, which the API server checks (enforced here as it does).
func TestUninstallLeavesACSVReCreatedUnderItsName(t *testing.T) {
	s := runtime.NewScheme()
	if err := operatorsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	theirs := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "widget.v1", UID: "theirs"}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(theirs).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			do := &client.DeleteOptions{}
			do.ApplyOptions(opts)
			cur := &operatorsv1alpha1.ClusterServiceVersion{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
				return err
			}
			if do.Preconditions == nil || do.Preconditions.UID == nil || *do.Preconditions.UID != cur.UID {
				return apierrors.NewConflict(schema.GroupResource{Resource: "clusterserviceversions"}, obj.GetName(),
					fmt.Errorf("Precondition failed: UID in object meta: %v", cur.UID))
			}
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	installed := theirs.DeepCopy()
	installed.UID = "mine" // the CSV the caller installed, deleted and replaced since
	err := olm.Uninstall(context.Background(), olm.UninstallInput{Client: c, CSV: installed})
	if err == nil || !strings.Contains(err.Error(), "re-created since") {
		t.Fatalf("Uninstall of a CSV re-created under its name: %v, want an error saying so", err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(theirs), &operatorsv1alpha1.ClusterServiceVersion{}); err != nil {
		t.Fatalf("the re-created CSV: %v, want it left alone", err)
	}
	if err := olm.Uninstall(context.Background(), olm.UninstallInput{Client: c, CSV: theirs}); err != nil {
		t.Fatalf("Uninstall of the CSV as it is: %v", err)
	}
}
