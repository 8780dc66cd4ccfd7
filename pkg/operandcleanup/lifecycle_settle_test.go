package operandcleanup

import (
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Settling: waiting, after an operation, until the controller has acted on it. Without it a sequence
// races the controller: a state that lasts a few milliseconds may pass before the controller looks, which
// is how races are found, but it also means a given sequence may or may not put the controller to the
// test in a given state (under load, a controller that cleans up in a state it must not was not caught
// in 12 sequences). A settled sequence judges the controller in every state it passes through.
//
// How: a probe CSV (no operand types, no OperatorGroup, so nothing for a cleanup) has its opt-in flipped;
// the controller adds or removes its finalizer in answer. CSV events reach the controller in the order
// the API server wrote them (one informer) and its work queue hands out keys in the order they came, so
// once the probe's finalizer follows, every CSV written before the flip has been picked up; then no
// reconcile may be running (controller-runtime's active-workers gauge, at 0 twice in a row, so that a key
// requeued as its reconcile ended is not missed). Operand events come from other informers and are not
// ordered with the probe: settling is about the controller's answer to CSV changes.

const settleTimeout = 30 * time.Second

func (r *lifecycleRun) startSettling() {
	// The gauge appears once the controller has started its workers (it leads): before that, "no
	// reconcile running" would be read from a gauge that is not there.
	Eventually(metricFamilies).WithTimeout(settleTimeout).Should(ContainElement(activeWorkers),
		"settling reads controller-runtime's %s gauge, which appears once the controller runs its workers: it never did (not leading? its log says)", activeWorkers)
	r.probe = keyOf(createCSV(r.ns["sentinel"], "settle-probe"))
}

const activeWorkers = "controller_runtime_active_workers"

// settleAfter waits until the controller has acted on everything written before; after names the
// operation for the failure message.
func (r *lifecycleRun) settleAfter(after string) {
	r.probeOn = !r.probeOn
	want := r.probeOn
	r.editCSV(r.probe, func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = want })
	Eventually(func() bool { c := getCSV(r.probe); return c != nil && hasFinalizer(c) }).
		WithTimeout(settleTimeout).WithPolling(10*time.Millisecond).Should(Equal(want),
		"settling after %s: the controller did not answer the probe CSV %s within %s (spec.cleanup.enabled set to %t, its finalizer %s should follow): it is not reconciling CSVs; its log says why",
		after, r.probe, settleTimeout, want, Finalizer)
	active := func() float64 {
		return metricValue(activeWorkers, map[string]string{"controller": ControllerName})
	}
	Eventually(active).WithTimeout(settleTimeout).WithPolling(10*time.Millisecond).MustPassRepeatedly(2).Should(BeZero(),
		"settling after %s: the controller was still reconciling after %s", after, settleTimeout)
}

// stopSettling removes the probe (its finalizer first: the controller may be stopped by then).
func (r *lifecycleRun) stopSettling() {
	r.editCSV(r.probe, func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = nil })
	Expect(client.IgnoreNotFound(tenv.admin.Delete(ctx, &v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: r.probe.Namespace, Name: r.probe.Name}}))).To(Succeed())
}
