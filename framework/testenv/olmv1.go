package testenv

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1/incluster"
)

// kindNetwork is the Docker network kind puts its nodes on: the registry for test bundles listens on
// its gateway, which the pods reach.
const kindNetwork = "kind"

// olmv1OnKind makes OLM v1 usable on the kind cluster for a stack that needs it (Components.OLMv1), as
// the envtest provider does on its own: reused when its managers are available and the registry the
// cluster publishes answers (another run of the machine serves it), else deployed with a registry of
// this process (incluster.StartOnKind), which it returns. That run's Stop then waits, like any run that
// removes something, until it is the last run on the cluster: the registry lives in its process.
func olmv1OnKind(ctx context.Context, c client.Client, log logr.Logger) (*incluster.Running, error) {
	if reg, err := olmv1.Published(ctx, c); err == nil && answers(ctx, reg.Push) && managersAvailable(ctx, c) {
		log.Info("OLM v1 is on the kind cluster, its test registry served by another run", "registry", reg.Push)
		return nil, nil
	}
	start := time.Now()
	r, err := incluster.StartOnKind(ctx, c, kindNetwork, func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) })
	if err != nil {
		return nil, fmt.Errorf("OLM v1 on the kind cluster: %w", err)
	}
	log.Info("OLM v1 ready on the kind cluster", "registry", r.Registry.Host, "took", time.Since(start).Round(time.Millisecond).String())
	return r, nil
}

// answers reports whether an OCI registry serves host (its /v2/ endpoint).
func answers(ctx context.Context, host string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/v2/", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// managersAvailable reports whether both OLM v1 managers' Deployments are available.
func managersAvailable(ctx context.Context, c client.Client) bool {
	for _, name := range []string{incluster.CatalogdDeployment, incluster.OperatorControllerDeployment} {
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: olmv1.SystemNamespace, Name: name}, dep); err != nil {
			return false
		}
		available := false
		for _, cond := range dep.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue {
				available = true
			}
		}
		if !available {
			return false
		}
	}
	return true
}
