package kube

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// LabelCreatedBy marks namespaces the framework creates for a test, so that a shared cluster can
// tell them apart.
const LabelCreatedBy = "cleanup-e2e.io/created-by"

// CreateNamespaces creates n namespaces named <prefix>-<random>-<i>, labelled LabelCreatedBy. It
// returns those it created so far with the error, so the caller can delete them.
func CreateNamespaces(ctx context.Context, c client.Client, prefix string, n int) ([]*corev1.Namespace, error) {
	suffix := utilrand.String(5)
	var out []*corev1.Namespace
	for i := range n {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", prefix, suffix, i),
			Labels: map[string]string{LabelCreatedBy: "cleanup-e2e"}}}
		if err := c.Create(ctx, ns); err != nil {
			return out, fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
		out = append(out, ns)
	}
	return out, nil
}

// WaitCreatedNamespacesGone waits (the gone interval) until no namespace labelled LabelCreatedBy is
// terminating. Call it before stopping a controller: what the namespace controller deletes while that
// controller is down, the controller never sees go (olm-operator then leaves an OperatorGroup's
// ClusterRoles for ever). The error names the namespaces still terminating.
func WaitCreatedNamespacesGone(ctx context.Context, c client.Client) error {
	return intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		list := &corev1.NamespaceList{}
		if err := c.List(ctx, list, client.HasLabels{LabelCreatedBy}); err != nil {
			return false, err.Error()
		}
		var terminating []string
		for _, ns := range list.Items {
			if ns.DeletionTimestamp != nil {
				terminating = append(terminating, ns.Name)
			}
		}
		return len(terminating) == 0, "namespaces still terminating: " + strings.Join(terminating, ", ")
	})
}
