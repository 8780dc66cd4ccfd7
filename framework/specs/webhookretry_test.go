package specs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// What a sample's create met on kind less than a second after InstallSucceeded.
var webhookRefused = apierrors.NewInternalError(errors.New(`failed calling webhook "mmemcached-v1alpha1.kb.io": failed to call webhook: ` +
	`Post "https://memcached-operator-controller-manager-service.op.svc:443/mutate-cache-example-com-v1alpha1-memcached?timeout=10s": ` +
	`dial tcp 10.96.12.34:443: connect: connection refused`))

// refusingClient refuses the first refusals creates with err, then creates.
func refusingClient(refusals int, err error) (client.Client, *int) {
	calls := 0
	return fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			calls++
			if calls <= refusals {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build(), &calls
}

func sampleConfigMap() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("op")
	u.SetName("sample")
	return u
}

// A create refused because the webhook is not routed yet is tried again until it answers; a denial
// is the webhook's answer and is returned at once; a webhook that never answers fails naming it.
func TestSampleCreatesRetryAWebhookThatCannotBeReachedYet(t *testing.T) {
	ctx := context.Background()
	explain := func() string {
		return "webhook \"mmemcached-v1alpha1.kb.io\" calls Service op/svc, which has no ready endpoint"
	}

	c, calls := refusingClient(3, webhookRefused)
	if err := createRetryingWebhooks(ctx, c, sampleConfigMap(), time.Minute, explain); err != nil || *calls != 4 {
		t.Errorf("after 3 refusals: %v, %d creates; want the 4th to create it", err, *calls)
	}

	denied := apierrors.NewForbidden(schema.GroupResource{Resource: "memcacheds"}, "sample", errors.New(`admission webhook "vmemcached-v1alpha1.kb.io" denied the request: spec.size must be > 0`))
	c, calls = refusingClient(100, denied)
	if err := createRetryingWebhooks(ctx, c, sampleConfigMap(), time.Minute, explain); err == nil || *calls != 1 {
		t.Errorf("a denial: %v after %d creates; want it returned at once", err, *calls)
	}

	c, _ = refusingClient(1000, webhookRefused)
	err := createRetryingWebhooks(ctx, c, sampleConfigMap(), 700*time.Millisecond, explain)
	for _, w := range []string{"connection refused", "the webhook did not answer for", "intervals.WebhookServing", "CLEANUP_E2E_WAIT_SCALE",
		"Service op/svc, which has no ready endpoint"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("a webhook that never answers: the error lacks %q: %v", w, err)
		}
	}
}
