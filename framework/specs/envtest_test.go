package specs_test

import (
	"sync"
	"testing"
)

// The package's envtest tests, side by side: each starts its own control plane and spends most of its
// time waiting on it. Goroutines rather than t.Parallel: TestSpecTree runs Ginkgo in the same binary,
// and Ginkgo refuses a -test.parallel that was set, while one P (make test on ≤ 2 CPUs) would leave
// t.Parallel at one test at a time. make test is ≈ 11 % shorter for it (docs/performance.md).
func TestOnEnvtest(t *testing.T) {
	var wg sync.WaitGroup
	for name, test := range map[string]func(*testing.T){
		"OLMv1Cases":    olmv1Cases,
		"MutationCheck": enabledCaseCatchesMutants,
	} {
		wg.Go(func() { t.Run(name, test) })
	}
	wg.Wait()
}
