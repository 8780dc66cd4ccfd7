package stack

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// On an existing cluster whose nodes pull from a registry, OperandCleanupImage is the image the
// controller's Deployment runs, and a controller that never becomes available is explained with it.
func TestOperandCleanupImageIsTheDeploymentsImage(t *testing.T) {
	const image = "registry.example.com/team/operand-cleanup:v0.1.0"
	var mu sync.Mutex
	var applied []string // the Deployment's image at each write
	c := fake.NewClientBuilder().WithScheme(kube.MustScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "Deployment" && u.GetName() == operandcleanupconfig.Deployment {
				containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
				mu.Lock()
				applied = append(applied, containers[0].(map[string]any)["image"].(string))
				mu.Unlock()
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}).Build()
	_, err := Ensure(context.Background(), Input{Client: c, Log: logr.Discard(), Timeout: 300 * time.Millisecond,
		Components: Components{OperandCleanup: true, OperandCleanupImage: image}})
	if err == nil || !strings.Contains(err.Error(), image) || !strings.Contains(err.Error(), "Stack.OperandCleanupImage") {
		t.Fatalf("Ensure on a cluster where nothing runs the Deployment: got %v; want an error naming %s and Stack.OperandCleanupImage", err, image)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(applied) != 1 || applied[0] != image {
		t.Fatalf("the controller's Deployment was applied with images %q; want once with %s", applied, image)
	}
}
