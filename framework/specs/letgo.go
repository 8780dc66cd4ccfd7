package specs

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/auditlog"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// letGo is, for an object that is gone, "; " and the write that let it go (its last finalizer's removal,
// by whom) from the cluster's audit log, where the provider keeps one (cluster.AuditLogs); "" while the
// object exists, or where the provider keeps no audit log.
func letGo(ctx context.Context, p cluster.Provider, c client.Client, o *unstructured.Unstructured) string {
	a, ok := p.(cluster.AuditLogs)
	if !ok {
		return ""
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), live); !apierrors.IsNotFound(err) {
		return ""
	}
	log, err := a.AuditLog()
	if err != nil {
		return "; the API server's audit log could not be read: " + err.Error()
	}
	return "; " + auditlog.LetGo(log, c.RESTMapper(), o)
}
