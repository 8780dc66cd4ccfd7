package olm

import (
	"context"
	"fmt"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ProbeNamespace holds the OperatorGroup used to check that OLM reconciles.
const ProbeNamespace = "cleanup-e2e-olm-probe"

// probeWindow is how long one Reconciling call waits for OLM to answer its probe.
const probeWindow = 5 * time.Second

// Reconciling reports whether OLM's olm-operator acts now: it creates a new OperatorGroup in
// ProbeNamespace and waits up to probeWindow for OLM to write its status, then deletes it. A health
// endpoint only says the process is up; an old probe's status only says OLM acted once. This fails for
// an OLM that is stopped, crashed or wedged.
func Reconciling(ctx context.Context, c client.Client) (bool, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ProbeNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("create OLM probe namespace: %w", err)
	}
	og := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ProbeNamespace, GenerateName: "probe-"},
		Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: []string{ProbeNamespace}}}
	if err := c.Create(ctx, og); err != nil {
		return false, fmt.Errorf("create OLM probe OperatorGroup: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = client.IgnoreNotFound(c.Delete(dctx, og))
	}()
	answered := false
	// The window bounds the polling, not each read: a read under the window's deadline is refused by
	// client-go's rate limiter when its wait would cross it, which is no answer from OLM (found by the
	// flake hunt under load). So the reads use the caller's ctx.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, probeWindow, true, func(context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(og), og); err != nil {
			return false, err
		}
		answered = og.Status.LastUpdated != nil && len(og.Status.Namespaces) > 0
		return answered, nil
	})
	if answered {
		return true, nil
	}
	if err != nil && ctx.Err() == nil && !wait.Interrupted(err) {
		return false, err
	}
	return false, nil
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
		default: // each Reconciling call already waited up to probeWindow
		}
	}
}
