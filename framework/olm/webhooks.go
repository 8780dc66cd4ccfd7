package olm

import (
	"context"
	"fmt"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// Webhook is one of a CSV's spec.webhookdefinitions as OLM installed it: the configuration that makes
// the API server call it and the Service it calls.
type Webhook struct {
	// Name is the webhook's name (the definition's generateName, e.g. "vmemcached-v1alpha1.kb.io").
	Name string
	Type operatorsv1alpha1.WebhookAdmissionType
	// Config is the object OLM made for it: "ValidatingWebhookConfiguration <name>",
	// "MutatingWebhookConfiguration <name>" or "CustomResourceDefinition <name>" (conversion).
	Config string
	// Service is what the API server calls, in the CSV's namespace ("" name: OLM has not made the
	// configuration yet).
	Service types.NamespacedName
}

func (w Webhook) String() string {
	s := fmt.Sprintf("webhook %q (%s", w.Name, w.Type)
	if w.Config != "" {
		s += ", " + w.Config
	}
	return s + ")"
}

// Webhooks are csv's webhooks as OLM installed them in csv's namespace, one per definition (and per
// CRD of a conversion webhook); one OLM has not configured yet has no Config.
func Webhooks(ctx context.Context, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion) ([]Webhook, error) {
	var out []Webhook
	var validating *admissionregistrationv1.ValidatingWebhookConfigurationList
	var mutating *admissionregistrationv1.MutatingWebhookConfigurationList
	for _, d := range csv.Spec.WebhookDefinitions {
		w := Webhook{Name: d.GenerateName, Type: d.Type}
		switch d.Type {
		case operatorsv1alpha1.ValidatingAdmissionWebhook:
			if validating == nil {
				validating = &admissionregistrationv1.ValidatingWebhookConfigurationList{}
				if err := c.List(ctx, validating); err != nil {
					return nil, fmt.Errorf("list ValidatingWebhookConfigurations: %w", err)
				}
			}
			for _, cfg := range validating.Items {
				for _, h := range cfg.Webhooks {
					if h.Name == d.GenerateName && inNamespace(h.ClientConfig.Service, csv.Namespace) {
						w.Config, w.Service = "ValidatingWebhookConfiguration "+cfg.Name, serviceOf(h.ClientConfig.Service)
					}
				}
			}
		case operatorsv1alpha1.MutatingAdmissionWebhook:
			if mutating == nil {
				mutating = &admissionregistrationv1.MutatingWebhookConfigurationList{}
				if err := c.List(ctx, mutating); err != nil {
					return nil, fmt.Errorf("list MutatingWebhookConfigurations: %w", err)
				}
			}
			for _, cfg := range mutating.Items {
				for _, h := range cfg.Webhooks {
					if h.Name == d.GenerateName && inNamespace(h.ClientConfig.Service, csv.Namespace) {
						w.Config, w.Service = "MutatingWebhookConfiguration "+cfg.Name, serviceOf(h.ClientConfig.Service)
					}
				}
			}
		case operatorsv1alpha1.ConversionWebhook:
			for _, name := range d.ConversionCRDs {
				cw := w
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
					return nil, fmt.Errorf("CRD %s of conversion webhook %s: %w", name, d.GenerateName, err)
				}
				if conv := crd.Spec.Conversion; conv != nil && conv.Webhook != nil && conv.Webhook.ClientConfig != nil {
					if s := conv.Webhook.ClientConfig.Service; s != nil && s.Namespace == csv.Namespace {
						cw.Config, cw.Service = "CustomResourceDefinition "+name, types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
					}
				}
				out = append(out, cw)
			}
			continue
		}
		out = append(out, w)
	}
	return out, nil
}

func inNamespace(s *admissionregistrationv1.ServiceReference, ns string) bool {
	return s != nil && s.Namespace == ns
}

func serviceOf(s *admissionregistrationv1.ServiceReference) types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
}

// WebhooksServing says whether every webhook of csv can be called: OLM configured it, and its Service
// has a ready endpoint (an EndpointSlice endpoint whose pod passes its readiness probe). When not, the
// word says which webhook, its Service, and what its endpoints are.
func WebhooksServing(ctx context.Context, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion) (bool, string) {
	if len(csv.Spec.WebhookDefinitions) == 0 {
		return true, ""
	}
	hooks, err := Webhooks(ctx, c, csv)
	if err != nil {
		return false, err.Error()
	}
	for _, w := range hooks {
		if w.Config == "" {
			return false, fmt.Sprintf("%s of CSV %s/%s: OLM has not configured it in namespace %s yet", w, csv.Namespace, csv.Name, csv.Namespace)
		}
		slices := &discoveryv1.EndpointSliceList{}
		if err := c.List(ctx, slices, client.InNamespace(w.Service.Namespace),
			client.MatchingLabels{discoveryv1.LabelServiceName: w.Service.Name}); err != nil {
			return false, fmt.Sprintf("%s: list the EndpointSlices of Service %s: %v", w, w.Service, err)
		}
		ready, all := 0, 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				all++
				if len(e.Addresses) > 0 && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
					ready++
				}
			}
		}
		if ready == 0 {
			return false, fmt.Sprintf("%s calls Service %s, which has no ready endpoint (%d endpoint(s) in %d EndpointSlice(s), "+
				"none ready: no pod of the operator that the Service selects passes its readiness probe)", w, w.Service, all, len(slices.Items))
		}
	}
	return true, ""
}

// WaitWebhooksServing waits until WebhooksServing: OLM reports a CSV Succeeded as soon as its
// Deployments are available, before the endpoints of its webhook Service are ready and routed, and a
// custom resource created in between is refused ("connection refused"). Every create that reaches a
// webhook still needs to try again on such errors for a moment (IsWebhookUnavailable): a ready
// endpoint is routed by each node's kube-proxy a moment later. On timeout the error names the webhook,
// its Service and how the operator is doing (its readiness, a crash and the last error it logged).
func WaitWebhooksServing(ctx context.Context, c client.Client, logs PodLogs, csv *operatorsv1alpha1.ClusterServiceVersion, timeout time.Duration) error {
	if len(csv.Spec.WebhookDefinitions) == 0 {
		return nil
	}
	err := intervals.Wait(ctx, intervals.WebhookServing, func() (bool, string) { return WebhooksServing(ctx, c, csv) },
		intervals.Within(timeout), explainOperator(c, logs, csv))
	if err != nil {
		return fmt.Errorf("the webhooks of CSV %s/%s are not callable: %w. The API server calls a webhook through its Service, "+
			"which routes only to a ready pod of the operator: its webhook server must listen on the Service's target port "+
			"with the certificate OLM mounts (/tmp/k8s-webhook-server/serving-certs), and its readiness probe must pass",
			csv.Namespace, csv.Name, err)
	}
	return nil
}

// IsWebhookUnavailable says whether err is the API server failing to reach a webhook — its Service has
// no endpoint yet, or one not routed or not serving yet — rather than the webhook's answer: what a
// create right after an install meets, and tries again (a denial by the webhook is no such error).
func IsWebhookUnavailable(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	if !strings.Contains(msg, "failed calling webhook") && !strings.Contains(msg, "conversion webhook") {
		return false
	}
	for _, s := range []string{"connection refused", "no endpoints available", "EOF", "connection reset",
		"TLS handshake", "tls: ", "x509: ", "no route to host", "i/o timeout", "context deadline exceeded",
		"service unavailable", "503"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
