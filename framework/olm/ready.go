package olm

import (
	"context"
	"fmt"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ProbeNamespace holds the OperatorGroup used to check that OLM reconciles.
const ProbeNamespace = "cleanup-e2e-olm-probe"

// Reconciling reports whether OLM's olm-operator is reconciling: it creates (once) an OperatorGroup in
// ProbeNamespace and checks that OLM has written its status. A health endpoint only says the process
// is up; this says it acts.
func Reconciling(ctx context.Context, c client.Client) (bool, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ProbeNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("create OLM probe namespace: %w", err)
	}
	og := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ProbeNamespace, Name: "probe"},
		Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: []string{ProbeNamespace}}}
	if err := c.Create(ctx, og); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("create OLM probe OperatorGroup: %w", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(og), og); err != nil {
		return false, err
	}
	return og.Status.LastUpdated != nil && len(og.Status.Namespaces) > 0, nil
}

// WaitReconciling polls Reconciling until it is true or timeout passes.
func WaitReconciling(ctx context.Context, c client.Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		ok, err := Reconciling(ctx, c)
		if ok {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("OLM did not reconcile the probe OperatorGroup %s/probe within %s (last error: %v)", ProbeNamespace, timeout, lastErr)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
