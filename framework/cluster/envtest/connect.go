package envtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// Connect attaches to an envtest cluster that another process of the same run started with New (the
// first process of a parallel Ginkgo run, framework/suite), given the kubeconfig that provider wrote
// (its KubeconfigPath). The control plane, kube-controller-manager, olm-operator and the local runtime
// keep running in that process, which runs every operator Deployment of the cluster, whichever process
// installed it; so N processes cost one control plane instead of N.
//
// The Provider returned only talks to the cluster: CollectArtifacts copies the same logs (the work dir
// is on this machine), Stop disconnects, and StopOLM/StartOLM fail saying that the process that started
// the cluster must do it (Ginkgo runs Serial specs there).
func Connect(kubeconfig string, opts ...Option) (*Provider, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("connect to envtest cluster: read kubeconfig %s (the KubeconfigPath of the provider that started it): %w", kubeconfig, err)
	}
	workDir := filepath.Dir(kubeconfig)
	if _, err := os.Stat(filepath.Join(workDir, "logs")); err != nil {
		return nil, fmt.Errorf("connect to envtest cluster: %s is not in the work dir of a running envtest provider (no logs/ beside it): %w", kubeconfig, err)
	}
	p := &Provider{opts: o, workDir: workDir, kubeconfig: kubeconfig, cfg: cfg, connected: true}
	c, err := p.client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.Reachable))
	defer cancel()
	if err := reachable(ctx, c); err != nil {
		return nil, fmt.Errorf("connect to envtest cluster of %s: %w", kubeconfig, err)
	}
	o.log.Info("connected to the envtest cluster of another process", "name", o.name, "server", cfg.Host, "workDir", workDir)
	return p, nil
}

// ownedElsewhere is the error of what only the process that started the cluster can do.
func (p *Provider) ownedElsewhere(what string) error {
	return fmt.Errorf("%s: this process connected to the envtest cluster in %s, which another process started and runs "+
		"olm-operator for; do it from that process (in a parallel Ginkgo run, process 1: mark the spec Serial)", what, p.workDir)
}

// reachable checks that the API server answers with these credentials.
func reachable(ctx context.Context, c client.Client) error {
	return c.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{})
}
