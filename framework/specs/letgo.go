package specs

import (
	"context"
	"fmt"
	"strings"
	"time"

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

// deletedBy is, for each of objs that is gone or being deleted, a line naming the request that deleted
// it, from the cluster's audit log (cluster.AuditLogs; "" where the provider keeps none).
func deletedBy(ctx context.Context, p cluster.Provider, c client.Client, objs []*unstructured.Unstructured) string {
	a, ok := p.(cluster.AuditLogs)
	if !ok {
		return ""
	}
	var log []byte
	var out []string
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(o), live)
		if err == nil && live.GetDeletionTimestamp() == nil || err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		if log == nil {
			if log, err = a.AuditLog(); err != nil {
				return "\n  (the API server's audit log could not be read: " + err.Error() + ")"
			}
		}
		out = append(out, fmt.Sprintf("\n  %s %s: %s", o.GetKind(), describeKey(o), auditlog.DeletedBy(log, auditlog.ObjectOf(c.RESTMapper(), o), time.Now())))
	}
	return strings.Join(out, "")
}
