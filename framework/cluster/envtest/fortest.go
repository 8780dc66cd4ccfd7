package envtest

import (
	"context"
	"testing"

	"github.com/go-logr/logr/testr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// ForTest starts a provider for a Go test: skipped with -short (it starts a control plane), its work
// root in the test's temp dir, its progress in the test's log (opts may override both), KUBECONFIG
// pointing at it for the test, and stopped when the test ends. It returns the provider and an admin
// client (scheme: kube.MustScheme).
func ForTest(ctx context.Context, t *testing.T, opts ...Option) (*Provider, client.Client) {
	t.Helper()
	p, c := ForParallelTest(ctx, t, opts...)
	t.Setenv("KUBECONFIG", p.KubeconfigPath())
	return p, c
}

// ForParallelTest is ForTest without KUBECONFIG, a variable of the whole process that a test calling
// t.Parallel may not set: such a test hands the provider's KubeconfigPath to what needs it.
func ForParallelTest(ctx context.Context, t *testing.T, opts ...Option) (*Provider, client.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	opts = append([]Option{WithWorkRoot(t.TempDir()), WithLogger(testr.New(t))}, opts...)
	p, err := New(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	c, err := kube.NewClient(p.RESTConfig(), kube.MustScheme())
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}
