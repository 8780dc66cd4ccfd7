package smoke

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const smokeImage = "cleanup-e2e.local/smoke-operator:v0.0.1"

// smokeOperator is the smallest operator that proves it runs with its own RBAC: it writes a heartbeat
// ConfigMap in its namespace (namespaced permission), reads its namespace (cluster permission), and
// records whether it may also write to the default namespace (it must not).
func smokeOperator(ctx context.Context, cfg *rest.Config, _ []string, getenv func(string) string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ns := getenv("OPERATOR_NAMESPACE")
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("read own namespace: %w", err)
	}
	_, forbiddenErr := cs.CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "smoke-escape-"}}, metav1.CreateOptions{})
	hb := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "smoke-heartbeat"},
		Data: map[string]string{"targets": getenv("TARGETS"), "outside-write": fmt.Sprint(forbiddenErr)}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, hb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("write heartbeat: %w", err)
	}
	<-ctx.Done()
	return nil
}
