package olmv1

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RegistryConfigMap is where a cluster says which registry its OLM v1 managers pull test bundles from
// (keys push and pull, an Endpoint): the provider that starts OLM v1 writes it, and every process of a
// run (a Ginkgo process that only connects, an e2e-framework suite) reads it there. On a cluster of your
// own, create it: push is the host:port your tests push to, pull the one the managers reach, marked
// insecure in their registries.conf unless it serves TLS they trust.
var RegistryConfigMap = client.ObjectKey{Namespace: SystemNamespace, Name: "cleanup-e2e-bundle-registry"}

// Publish writes reg as RegistryConfigMap (created or replaced).
func Publish(ctx context.Context, c client.Client, reg Endpoint) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: RegistryConfigMap.Namespace, Name: RegistryConfigMap.Name},
		Data: map[string]string{"push": reg.Push, "pull": reg.Pull}}
	err := c.Create(ctx, cm)
	if apierrors.IsAlreadyExists(err) {
		err = c.Update(ctx, cm)
	}
	if err != nil {
		return fmt.Errorf("publish the bundle registry as ConfigMap %s: %w", RegistryConfigMap, err)
	}
	return nil
}

// Published is the registry the cluster's RegistryConfigMap names.
func Published(ctx context.Context, c client.Client) (Endpoint, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, RegistryConfigMap, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return Endpoint{}, fmt.Errorf("no registry for OLM v1 test bundles on this cluster (ConfigMap %s): the envtest and kind "+
				"providers start one with OLM v1 (stack.Components.OLMv1); on a cluster of your own create that ConfigMap with "+
				"keys push (the host:port your tests push to) and pull (the host:port operator-controller and catalogd pull from)", RegistryConfigMap)
		}
		return Endpoint{}, fmt.Errorf("read ConfigMap %s: %w", RegistryConfigMap, err)
	}
	reg := Endpoint{Push: cm.Data["push"], Pull: cm.Data["pull"]}
	if reg.Push == "" || reg.Pull == "" {
		return Endpoint{}, fmt.Errorf("ConfigMap %s needs both keys push and pull (host:port), has %v", RegistryConfigMap, cm.Data)
	}
	return reg, nil
}
