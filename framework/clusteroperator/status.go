package clusteroperator

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// Get returns a getter of the ClusterOperator name, for Eventually and the matchers.
func Get(ctx context.Context, c client.Client, name string) func() (*unstructured.Unstructured, error) {
	return func() (*unstructured.Unstructured, error) {
		return kube.Get(ctx, c, Object(name))
	}
}

// Object is the ClusterOperator name with nothing but its kind and name, to read or delete it.
func Object(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{}}}
	u.SetGroupVersionKind(configv1.ClusterOperatorGVK)
	u.SetName(name)
	return u
}

// Report sets status.versions of the ClusterOperator named by manifest to the versions the manifest
// lists, with Available=True, Degraded=False and Progressing=False (what the applier, like the CVO,
// waits for), creating it if needed.
func Report(ctx context.Context, c client.Client, manifest *unstructured.Unstructured) error {
	versions, _, err := unstructured.NestedSlice(manifest.Object, "status", "versions")
	if err != nil {
		return err
	}
	return SetStatus(ctx, c, manifest.GetName(), versions,
		Condition("Available", "True", "AsExpected", ""), Condition("Degraded", "False", "AsExpected", ""),
		Condition("Progressing", "False", "AsExpected", ""))
}

// SetStatus replaces status.versions and status.conditions of the ClusterOperator name (created if
// missing), as its operator would.
func SetStatus(ctx context.Context, c client.Client, name string, versions []interface{}, conditions ...interface{}) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live, err := kube.Get(ctx, c, Object(name))
		if apierrors.IsNotFound(err) {
			live = Object(name)
			err = c.Create(ctx, live)
		}
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedSlice(live.Object, versions, "status", "versions"); err != nil {
			return err
		}
		if err := unstructured.SetNestedSlice(live.Object, conditions, "status", "conditions"); err != nil {
			return err
		}
		return c.Status().Update(ctx, live)
	})
}

// Condition is one ClusterOperator condition for SetStatus.
func Condition(condType, status, reason, message string) interface{} {
	return map[string]interface{}{"type": condType, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}
}

// OperandVersions are status.versions entries from name, version pairs.
func OperandVersions(nameVersionPairs ...string) []interface{} {
	var out []interface{}
	for i := 0; i+1 < len(nameVersionPairs); i += 2 {
		out = append(out, map[string]interface{}{"name": nameVersionPairs[i], "version": nameVersionPairs[i+1]})
	}
	return out
}
