package existing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
)

// CollectArtifacts implements cluster.Provider with what the API can show: which cluster it is, and for the operand-cleanup controller's and OLM's namespaces their events and the logs of
// their pods (the last 10 MiB of each container, also of the previous run when it restarted). Control-
// plane logs are not reachable through the API.
func (p *Provider) CollectArtifacts(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	summary := fmt.Sprintf("provider %s (existing cluster)\ncontext: %s\nserver: %s\n", p.opts.name, p.context, p.cfg.Host)
	errs = append(errs, os.WriteFile(filepath.Join(dir, "provider.txt"), []byte(summary), 0o644))
	cs, err := kubernetes.NewForConfig(p.cfg)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	namespaces := append([]string{operandcleanupconfig.Namespace}, stack.OLMNamespaces(ctx, p.c)...)
	for _, ns := range namespaces {
		nsDir := filepath.Join(dir, ns)
		if err := os.MkdirAll(nsDir, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, writeEvents(ctx, cs, ns, filepath.Join(nsDir, "events.txt")))
		errs = append(errs, writePodLogs(ctx, cs, ns, nsDir))
	}
	return errors.Join(errs...)
}

func writeEvents(ctx context.Context, cs kubernetes.Interface, ns, path string) error {
	events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("events of %s: %w", ns, err)
	}
	return artifacts.WriteEvents(path, events.Items)
}

func writePodLogs(ctx context.Context, cs kubernetes.Interface, ns, dir string) error {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("pods of %s: %w", ns, err)
	}
	if len(pods.Items) == 0 {
		return os.WriteFile(filepath.Join(dir, "no-pods.txt"), []byte("no pods in "+ns+" (a node-less cluster, or nothing running)\n"), 0o644)
	}
	return artifacts.PodLogs(ctx, cs, ns, dir)
}
