package envtest

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/process"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// controllers run by kube-controller-manager. envtest has no controllers at all, so namespaces never
// finish deleting and ownerRef'd objects are never collected (controller-runtime #880, #626). The
// deployment and replicaset controllers stay off: without kubelets they would only make Pods that never
// run; the local runtime plays their part instead.
var controllers = []string{
	"namespace-controller",
	"garbage-collector-controller",
	"serviceaccount-controller",
	"clusterrole-aggregation-controller",
}

func startControllerManager(workDir, kubeconfig string) (*process.Process, error) {
	bin, err := toolchain.KubeControllerManager.Path()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--controllers=" + join(controllers),
		"--leader-elect=false",
		"--secure-port=0",
		"--concurrent-gc-syncs=20",
		"--concurrent-namespace-syncs=10",
		"--cert-dir=" + filepath.Join(workDir, "kcm"),
	}
	return process.Start(process.Spec{Name: "kube-controller-manager", Path: bin, Args: args,
		LogPath: filepath.Join(workDir, "logs", "kube-controller-manager.log")})
}

// garbageCollecting checks that the garbage collector works: a ConfigMap owned by a deleted owner goes.
func garbageCollecting(ctx context.Context, c client.Client, kcm *process.Process) error {
	ns := "kube-system"
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "gc-probe-owner-"}}
	if err := c.Create(ctx, owner); err != nil {
		return err
	}
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "gc-probe-dependent-",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	if err := c.Create(ctx, dep); err != nil {
		return err
	}
	if err := c.Delete(ctx, owner); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, intervals.Get(intervals.GarbageCollecting))
	defer cancel()
	err := kcm.WaitFor(wctx, "the garbage collector to delete a probe ConfigMap", 200*time.Millisecond, func(ctx context.Context) bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(dep), &corev1.ConfigMap{}))
	})
	if err != nil {
		return fmt.Errorf("kube-controller-manager not working: %w", err)
	}
	return nil
}

func join(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}
