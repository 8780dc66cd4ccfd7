package existing

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// The provider connects to the cluster of $KUBECONFIG, writes a kubeconfig of the chosen context for
// child processes, collects what the API can show, and on Stop removes only its work dir: nothing on
// the cluster.
func TestConnectsAndLeavesTheClusterAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, c := envtest.ForTest(ctx, t, envtest.WithName("existing-test"), envtest.WithoutOLM())
	var before corev1.NamespaceList
	must(t, c.List(ctx, &before))

	work := t.TempDir()
	p, err := New(ctx, WithName("first"), WithLogger(testr.New(t)), WithWorkRoot(work))
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(p.KubeconfigPath()); err != nil || !strings.Contains(string(data), strings.TrimSuffix(env.RESTConfig().Host, "/")) {
		t.Errorf("kubeconfig for child processes %s: %v (does not name the server %s)", p.KubeconfigPath(), err, env.RESTConfig().Host)
	}
	pc, err := kube.NewClient(p.RESTConfig(), kube.MustScheme())
	must(t, err)
	must(t, pc.List(ctx, &corev1.NamespaceList{}))

	artifacts := t.TempDir()
	if err := p.CollectArtifacts(ctx, artifacts); err != nil {
		t.Logf("collect artifacts: %v", err) // envtest has no pods; events may be empty
	}
	if data, err := os.ReadFile(filepath.Join(artifacts, "provider.txt")); err != nil || !strings.Contains(string(data), strings.TrimSuffix(env.RESTConfig().Host, "/")) {
		t.Errorf("provider.txt in artifacts: %v %q (want the server named)", err, data)
	}

	must(t, p.Stop(ctx))
	if _, err := os.Stat(filepath.Dir(p.KubeconfigPath())); !os.IsNotExist(err) {
		t.Errorf("work dir %s still there after Stop: %v", filepath.Dir(p.KubeconfigPath()), err)
	}
	var after corev1.NamespaceList
	must(t, c.List(ctx, &after))
	if len(after.Items) != len(before.Items) {
		t.Errorf("namespaces before %d, after %d: the provider must not change the cluster", len(before.Items), len(after.Items))
	}
}

// A kubeconfig that names no usable cluster is a clear error naming the variable and the context.
func TestNoClusterIsAClearError(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	_, err := New(context.Background(), WithContext("nowhere"), WithWorkRoot(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "KUBECONFIG=") || !strings.Contains(err.Error(), `"nowhere"`) {
		t.Fatalf("want an error naming KUBECONFIG and the context, got %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
