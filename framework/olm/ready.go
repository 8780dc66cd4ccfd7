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

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
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
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), intervals.Get(intervals.Request))
		defer cancel()
		_ = client.IgnoreNotFound(c.Delete(dctx, og))
	}()
	answered := false
	var readErr error
	// The window bounds the polling, not each read: a read under the window's deadline is refused by
	// client-go's rate limiter when its wait would cross it, which is no answer from OLM (found by the
	// flake hunt under load). So the reads use the caller's ctx. The window is not scaled: it is one
	// attempt, and WaitReconciling, which repeats it, has the scaled timeout.
	_ = intervals.Wait(ctx, intervals.OLMReady, func() (bool, string) {
		if readErr = c.Get(ctx, client.ObjectKeyFromObject(og), og); readErr != nil {
			return true, ""
		}
		answered = og.Status.LastUpdated != nil && len(og.Status.Namespaces) > 0
		return answered, "no status yet"
	}, intervals.Within(probeWindow), intervals.Every(100*time.Millisecond))
	if answered {
		return true, nil
	}
	if readErr != nil && ctx.Err() == nil {
		return false, readErr
	}
	return false, nil
}

// WaitReconciling polls Reconciling until it is true or timeout passes (≤ 0: the olm-ready interval).
func WaitReconciling(ctx context.Context, c client.Client, timeout time.Duration) error {
	timeout = intervals.Or(timeout, intervals.OLMReady)
	// Reconciling's reads end with the wait too, not a probe window later.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := intervals.Wait(ctx, intervals.OLMReady, func() (bool, string) {
		ok, err := Reconciling(ctx, c)
		if err != nil {
			return ok, err.Error()
		}
		return ok, fmt.Sprintf("no status on a new probe OperatorGroup within %s", probeWindow)
	}, intervals.Within(timeout), intervals.Every(time.Millisecond)) // each Reconciling call already waited up to probeWindow
	if err != nil {
		return fmt.Errorf("OLM did not reconcile the probe OperatorGroup in %s: %w", ProbeNamespace, err)
	}
	return nil
}
