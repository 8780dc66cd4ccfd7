package stack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// A CRD whose finalizer failed to delete its instances is annotated, so that the API server retries
// now instead of after its backoff; one that is only slow to go is left alone.
func TestWaitForACRDAsksItsFinalizerToRetryAFailedDeletion(t *testing.T) {
	for _, tc := range []struct {
		reason, message string
		wantNudge       bool
	}{
		{"InstanceDeletionFailed", "could not list instances: storage is (re)initializing", true},
		{"InstanceDeletionInProgress", "CustomResource deletion is in progress", false},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			now := metav1.Now()
			crd := &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: "things.x.test", UID: "crd-uid", DeletionTimestamp: &now,
					Finalizers: []string{apiextensionsv1.CustomResourceCleanupFinalizer}},
				Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
					{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: tc.reason, Message: tc.message}}},
			}
			patches := 0
			c := fake.NewClientBuilder().WithScheme(kube.MustScheme()).WithObjects(crd).WithInterceptorFuncs(interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					patches++
					return c.Patch(ctx, obj, patch, opts...)
				},
			}).Build()
			l := &ledger{c: c, log: logr.Discard(), timeout: 500 * time.Millisecond}
			err := l.waitGone(context.Background(), entry{gvk: apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), name: crd.Name, uid: crd.UID})
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("the wait must time out naming the CRD's Terminating reason %s, got %v", tc.reason, err)
			}
			live := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: crd.Name}, live); err != nil {
				t.Fatal(err)
			}
			_, annotated := live.Annotations[FinalizeAgainAnnotation]
			if !tc.wantNudge {
				if patches != 0 || annotated {
					t.Fatalf("a deletion still in progress must be left alone: %d patches, annotations %v", patches, live.Annotations)
				}
				return
			}
			// the first poll annotates, the next ones within finalizeAgainEvery do not
			if patches != 1 || !annotated || !strings.Contains(err.Error(), FinalizeAgainAnnotation) {
				t.Fatalf("want one annotation %s, said in the wait's message; got %d patches, annotations %v, error %v",
					FinalizeAgainAnnotation, patches, live.Annotations, err)
			}
		})
	}
}
