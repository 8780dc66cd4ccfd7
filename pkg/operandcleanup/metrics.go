package operandcleanup

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Prometheus metrics, registered once per process in controller-runtime's registry (served by the
// manager's metrics endpoint). Several controllers in one process (tests, the local runtime) share them.
var (
	metricPending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "operand_cleanup_pending_resources",
		Help: "Custom resources still present for a CSV whose operand cleanup is in progress.",
	}, []string{"namespace", "csv"})

	metricDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "operand_cleanup_duration_seconds",
		Help:    "Time from the CSV's deletionTimestamp to the end of its operand cleanup.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 16), // 1s .. ~9h
	}, []string{"result"}) // completed | aborted

	metricDeletes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "operand_cleanup_deletes_total",
		Help: "Delete calls issued for operands, by result (deleted, gone, recreated, error).",
	}, []string{"result"})

	metricStalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "operand_cleanup_stalled_total",
		Help: "CleanupStalled warnings emitted.",
	}, []string{"namespace", "csv"})

	registerOnce sync.Once
	registerErr  error
)

// RegisterMetrics registers the collectors in controller-runtime's registry once per process; later calls
// return the first call's result. A collector already registered under the same name is tolerated.
func RegisterMetrics() error {
	registerOnce.Do(func() {
		for _, c := range []prometheus.Collector{metricPending, metricDuration, metricDeletes, metricStalls} {
			if err := ctrlmetrics.Registry.Register(c); err != nil {
				var are prometheus.AlreadyRegisteredError
				if !errors.As(err, &are) {
					registerErr = err
					return
				}
			}
		}
	})
	return registerErr
}

func forgetMetrics(namespace, name string) {
	metricPending.DeleteLabelValues(namespace, name)
	metricStalls.DeleteLabelValues(namespace, name)
}
