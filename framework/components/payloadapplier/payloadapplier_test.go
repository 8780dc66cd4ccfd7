package payloadapplier

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	payloadapplierconfig "github.com/cleanup-e2e/cleanup-e2e/config/payload-applier"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// Uninstall removes what the install created and nothing that was there before it: a namespace of
// the applier's name that the cluster already had is left (it was deleted by name, with all it held).
func TestUninstallRemovesOnlyWhatTheInstallCreated(t *testing.T) {
	ctx := context.Background()
	theirs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: payloadapplierconfig.Namespace, UID: "theirs"}}
	c := fake.NewClientBuilder().WithScheme(kube.MustScheme()).WithObjects(theirs).Build()
	// The fake never makes the Deployment available: the wait's error is not this test's subject.
	pa, _ := Install(ctx, InstallInput{Client: c, Timeout: 100 * time.Millisecond})
	if pa == nil {
		t.Fatal("Install returned no applier")
	}
	if err := c.Get(ctx, client.ObjectKey{Name: pa.ClusterRBAC}, &rbacv1.ClusterRole{}); err != nil {
		t.Fatalf("the install made no ClusterRole %s: %v", pa.ClusterRBAC, err)
	}
	if err := pa.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: theirs.Name}, &corev1.Namespace{}); err != nil {
		t.Fatalf("namespace %s, there before the install: %v, want it left", theirs.Name, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: pa.ClusterRBAC}, &rbacv1.ClusterRole{}); err == nil {
		t.Fatalf("ClusterRole %s, made by the install, is still there", pa.ClusterRBAC)
	}
}
