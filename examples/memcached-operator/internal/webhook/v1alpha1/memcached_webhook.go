// Package v1alpha1 holds the Memcached admission webhooks, in the shape `kubebuilder create webhook
// --defaulting --programmatic-validation` gives them: a defaulter and a validator registered with the
// manager, served on the webhook server's port (9443) with the certificate OLM mounts at
// /tmp/k8s-webhook-server/serving-certs.
package v1alpha1

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cachev1alpha1 "example.com/memcached-operator/api/v1alpha1"
)

var memcachedlog = logf.Log.WithName("memcached-resource")

// SetupMemcachedWebhookWithManager registers the webhooks for Memcached with the manager.
func SetupMemcachedWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &cachev1alpha1.Memcached{}).
		WithValidator(&MemcachedValidator{}).
		WithDefaulter(&MemcachedDefaulter{}).
		Complete()
}

// +kubebuilder:webhook:path=/mutate-cache-example-com-v1alpha1-memcached,mutating=true,failurePolicy=fail,sideEffects=None,groups=cache.example.com,resources=memcacheds,verbs=create;update,versions=v1alpha1,name=mmemcached-v1alpha1.kb.io,admissionReviewVersions=v1

// MemcachedDefaulter gives a Memcached without a size one instance.
type MemcachedDefaulter struct{}

// Default sets spec.size to 1 when it is unset.
func (d *MemcachedDefaulter) Default(_ context.Context, obj *cachev1alpha1.Memcached) error {
	memcachedlog.Info("Defaulting for Memcached", "name", obj.GetName())
	if obj.Spec.Size == nil {
		obj.Spec.Size = ptr.To[int32](1)
	}
	return nil
}

// +kubebuilder:webhook:path=/validate-cache-example-com-v1alpha1-memcached,mutating=false,failurePolicy=fail,sideEffects=None,groups=cache.example.com,resources=memcacheds,verbs=create;update,versions=v1alpha1,name=vmemcached-v1alpha1.kb.io,admissionReviewVersions=v1

// MemcachedValidator refuses what the CRD's schema cannot: a Memcached whose viewer ClusterRole (its
// finalizer's to remove) could not be named.
type MemcachedValidator struct{}

// ValidateCreate checks a new Memcached.
func (v *MemcachedValidator) ValidateCreate(_ context.Context, obj *cachev1alpha1.Memcached) (admission.Warnings, error) {
	memcachedlog.Info("Validation for Memcached upon creation", "name", obj.GetName())
	return nil, validateViewerRoleName(obj)
}

// ValidateUpdate checks a changed Memcached.
func (v *MemcachedValidator) ValidateUpdate(_ context.Context, _, newObj *cachev1alpha1.Memcached) (admission.Warnings, error) {
	memcachedlog.Info("Validation for Memcached upon update", "name", newObj.GetName())
	return nil, validateViewerRoleName(newObj)
}

// ValidateDelete lets every Memcached go: its finalizer cleans up.
func (v *MemcachedValidator) ValidateDelete(_ context.Context, obj *cachev1alpha1.Memcached) (admission.Warnings, error) {
	memcachedlog.Info("Validation for Memcached upon deletion", "name", obj.GetName())
	return nil, nil
}

// validateViewerRoleName: the controller names the ClusterRole memcached-<namespace>-<name>-viewer.
func validateViewerRoleName(m *cachev1alpha1.Memcached) error {
	name := fmt.Sprintf("memcached-%s-%s-viewer", m.Namespace, m.Name)
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("namespace and name too long for the viewer ClusterRole %q: %v", name, errs)
	}
	return nil
}
