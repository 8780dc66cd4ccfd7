package olm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// What a create met on kind less than a second after InstallSucceeded.
const refused = `Internal error occurred: failed calling webhook "mmemcached-v1alpha1.kb.io": failed to call webhook: ` +
	`Post "https://memcached-operator-controller-manager-service.op.svc:443/mutate-cache-example-com-v1alpha1-memcached?timeout=10s": ` +
	`dial tcp 10.96.12.34:443: connect: connection refused`

func TestIsWebhookUnavailableTellsUnreachableFromDenied(t *testing.T) {
	for msg, want := range map[string]bool{
		refused: true,
		`Internal error occurred: failed calling webhook "v.kb.io": failed to call webhook: Post "https://s.op.svc:443/v": no endpoints available for service "s"`:     true,
		`Internal error occurred: failed calling webhook "v.kb.io": failed to call webhook: Post "https://s.op.svc:443/v": EOF`:                                        true,
		`Internal error occurred: failed calling webhook "v.kb.io": failed to call webhook: Post "https://s.op.svc:443/v": net/http: TLS handshake timeout`:            true,
		`conversion webhook for cache.example.com/v1, Kind=Memcached failed: Post "https://s.op.svc:443/convert": dial tcp 10.96.0.9:443: connect: connection refused`: true,
		`admission webhook "vmemcached-v1alpha1.kb.io" denied the request: spec.size must be greater than 0`:                                                           false,
		`dial tcp 10.0.0.1:6443: connect: connection refused`: false, // the API server itself
	} {
		if got := IsWebhookUnavailable(errors.New(msg)); got != want {
			t.Errorf("IsWebhookUnavailable(%q) = %v, want %v", msg, got, want)
		}
	}
}

func webhookCSV() *operatorsv1alpha1.ClusterServiceVersion {
	csv := crashCSV()
	csv.Spec.WebhookDefinitions = []operatorsv1alpha1.WebhookDescription{
		{GenerateName: "vmemcached-v1alpha1.kb.io", Type: operatorsv1alpha1.ValidatingAdmissionWebhook, DeploymentName: "memcached-operator-controller-manager"},
		{GenerateName: "mmemcached-v1alpha1.kb.io", Type: operatorsv1alpha1.MutatingAdmissionWebhook, DeploymentName: "memcached-operator-controller-manager"},
	}
	return csv
}

// As OLM makes them: one configuration per webhook, calling the Service of the Deployment.
func webhookConfigs(ns string) []client.Object {
	svc := &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "memcached-operator-controller-manager-service", Port: ptr.To[int32](443)}
	return []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "vmemcached-v1alpha1.kb.io-" + ns},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "vmemcached-v1alpha1.kb.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: svc}}}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mmemcached-v1alpha1.kb.io-" + ns},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mmemcached-v1alpha1.kb.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: svc}}}},
	}
}

func endpointSlice(ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "memcached-operator-controller-manager-service-x7k",
		Labels: map[string]string{discoveryv1.LabelServiceName: "memcached-operator-controller-manager-service"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}}}
}

// The webhooks are callable once OLM configured each and its Service has a ready endpoint; the
// configurations of another installation of the same operator (another namespace) do not count.
func TestWebhooksServingWaitsForAReadyEndpointOfEachWebhooksService(t *testing.T) {
	ctx := context.Background()
	csv := webhookCSV()
	for _, tc := range []struct {
		name string
		objs []client.Object
		want string // "" = serving
	}{
		{name: "not configured", objs: webhookConfigs("another-install"),
			want: `webhook "vmemcached-v1alpha1.kb.io" (ValidatingAdmissionWebhook) of CSV op/memcached-operator.v0.0.1: OLM has not configured it`},
		{name: "no endpoints", objs: webhookConfigs("op"),
			want: `webhook "vmemcached-v1alpha1.kb.io" (ValidatingAdmissionWebhook, ValidatingWebhookConfiguration vmemcached-v1alpha1.kb.io-op) calls ` +
				`Service op/memcached-operator-controller-manager-service, which has no ready endpoint (0 endpoint(s) in 0 EndpointSlice(s)`},
		{name: "an endpoint, not ready", objs: append(webhookConfigs("op"), endpointSlice(false)), want: "1 endpoint(s) in 1 EndpointSlice(s), none ready"},
		{name: "ready", objs: append(webhookConfigs("op"), endpointSlice(true))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(crashScheme(t)).WithObjects(tc.objs...).Build()
			ok, why := WebhooksServing(ctx, c, csv)
			if ok != (tc.want == "") || !strings.Contains(why, tc.want) {
				t.Errorf("WebhooksServing = %v, %q; want %q", ok, why, tc.want)
			}
		})
	}

	// Never ready: the wait's error names the webhook, its Service, what to check, and the operator.
	c := fake.NewClientBuilder().WithScheme(crashScheme(t)).WithObjects(append(webhookConfigs("op"), endpointSlice(false), kindDeployment())...).Build()
	err := WaitWebhooksServing(ctx, c, nil, csv, 500*time.Millisecond)
	for _, w := range []string{"the webhooks of CSV op/memcached-operator.v0.0.1 are not callable", `webhook "vmemcached-v1alpha1.kb.io"`,
		"Service op/memcached-operator-controller-manager-service", "none ready", "readiness probe must pass",
		"operator: deployment op/memcached-operator-controller-manager not available: MinimumReplicasUnavailable"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("the wait's error lacks %q: %v", w, err)
		}
	}
	if err := WaitWebhooksServing(ctx, c, nil, crashCSV(), time.Second); err != nil {
		t.Errorf("a CSV without webhooks: %v", err)
	}
}
