package specs

import (
	"context"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

type fakeProvider struct{ webhooks string }

func (f fakeProvider) Name() string                                   { return "fake-1" }
func (f fakeProvider) Kind() string                                   { return "fake" }
func (f fakeProvider) RESTConfig() *rest.Config                       { return nil }
func (f fakeProvider) KubeconfigPath() string                         { return "" }
func (f fakeProvider) CollectArtifacts(context.Context, string) error { return nil }
func (f fakeProvider) Stop(context.Context) error                     { return nil }

type noWebhooks struct{ fakeProvider }

func (noWebhooks) WebhooksUnsupported() string {
	return "nothing routes the API server's calls to the operators"
}

func csvWithWebhooks(hooks ...operatorsv1alpha1.WebhookDescription) *operatorsv1alpha1.ClusterServiceVersion {
	csv := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: "memcached-operator.v0.0.1"}}
	csv.Spec.WebhookDefinitions = hooks
	return csv
}

// A CSV with webhooks on a provider that cannot call them fails before anything is installed, naming
// the CSV, its webhooks, why, and where it can run.
func TestWebhooksOnAProviderThatCannotCallThemFailUpFront(t *testing.T) {
	csv := csvWithWebhooks(
		operatorsv1alpha1.WebhookDescription{GenerateName: "vmemcached.kb.io", Type: operatorsv1alpha1.ValidatingAdmissionWebhook},
		operatorsv1alpha1.WebhookDescription{GenerateName: "mmemcached.kb.io", Type: operatorsv1alpha1.MutatingAdmissionWebhook})
	err := supports(noWebhooks{}, csv)
	if err == nil {
		t.Fatal("a CSV with webhookdefinitions was accepted on a provider that cannot call webhooks")
	}
	for _, want := range []string{"memcached-operator.v0.0.1", "vmemcached.kb.io (ValidatingAdmissionWebhook)",
		"mmemcached.kb.io (MutatingAdmissionWebhook)", "the fake provider cannot call them: nothing routes the API server's calls",
		"CLEANUP_E2E_PROVIDER=kind", "specs.MustWithoutWebhooks(bundleDir)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	// The provider's kind, not the name of the environment (e.g. "memcached-uninstall-1").
	if strings.Contains(err.Error(), "fake-1") {
		t.Errorf("the error names the environment instead of the provider: %v", err)
	}
}

func TestWithoutWebhooksOrOnAClusterWithNodesAllIsSupported(t *testing.T) {
	if err := supports(noWebhooks{}, csvWithWebhooks()); err != nil {
		t.Errorf("a CSV without webhooks: %v", err)
	}
	hooks := csvWithWebhooks(operatorsv1alpha1.WebhookDescription{GenerateName: "v.kb.io", Type: operatorsv1alpha1.ValidatingAdmissionWebhook})
	if err := supports(fakeProvider{}, hooks); err != nil {
		t.Errorf("a provider that calls webhooks (kind, existing): %v", err)
	}
}
