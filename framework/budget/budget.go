// Package budget records where a run's seconds go: every spec of the spec library times its phases
// (namespaces, install, operands reconciled, uninstall requested, operands gone, CSV gone, leftovers
// check, and the case as a whole) and front ends time the cluster's set-up. Each process appends one
// JSON line per phase to $ARTIFACTS/budget/<pid>.jsonl, so parallel Ginkgo processes and go test
// packages never share a file; scripts/budget reads them all and prints, per phase, the median and the
// slowest spec, at the end of `make test` and `make e2e` (and writes summary.json for trend plots).
//
// Phases, in the order a spec goes through them:
//
//	provider-ready       the provider started (once per cluster, spec "setup <name>")
//	stack-ready          OLM, the operand-cleanup controller and CRDs ensured on it
//	cluster-alone        a Serial spec (or e2eframework's Alone) waiting to have a shared cluster alone
//	                     (spec: why it waits, e.g. "Serial spec <name>")
//	api-locks            waiting for the APIs the spec uses (another run's spec, or an exclusive one,
//	                     holds them: testenv's API locks)
//	namespaces           the spec's namespaces created
//	snapshot             the leftovers check's "before" snapshot
//	install              OperatorGroup, CSV Succeeded, the cleanup finalizer as opted
//	operands-reconciled  samples created and taken in charge by the operator
//	uninstall-requested  the CSV deleted
//	operands-gone        cleanup removed the operands and the finalizers did their job
//	csv-gone             the CSV, the operator's Deployment and its pods gone
//	quiet                a window in which the spec watches that nothing happens (operands kept, no
//	                     cleanup finalizer without the opt-in: intervals.Quiet)
//	leftovers-check      the "after" snapshot diffed until clean
//	case                 the whole case, from its first step to its last
//	last-run             a run on a shared cluster waiting to be the last one alive, to remove what it
//	                     installed (spec "teardown <name>")
//	teardown             removing it and stopping the provider
//
// scripts/budget adds install-to-uninstalled: per spec, the sum of install through csv-gone.
//
// Recording never fails a test: a budget that cannot be written is reported on stderr once.
package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
)

// Entry is one timed phase of one spec.
type Entry struct {
	Spec    string    `json:"spec"`
	Phase   string    `json:"phase"`
	Start   time.Time `json:"start"`
	Seconds float64   `json:"seconds"`
	// Failed is true when the spec failed during the phase (its duration is then a timeout's).
	Failed bool `json:"failed,omitempty"`
}

// Dir is where the budget files go: <artifacts>/budget.
func Dir() string { return filepath.Join(artifacts.Dir(), "budget") }

// Start times phase of spec; call the returned func when the phase ends. failed says whether the
// spec failed meanwhile (nil: it did not).
func Start(spec, phase string, failed func() bool) func() {
	start := now()
	return func() {
		e := Entry{Spec: spec, Phase: phase, Start: start, Seconds: now().Sub(start).Seconds()}
		if failed != nil {
			e.Failed = failed()
		}
		write(e)
	}
}

var (
	mu       sync.Mutex
	reported bool
	now      = time.Now // the budget's clock; tests move it instead of sleeping
)

func write(e Entry) {
	line, err := json.Marshal(e)
	if err == nil {
		mu.Lock()
		defer mu.Unlock()
		err = appendLine(filepath.Join(Dir(), fmt.Sprintf("%d.jsonl", os.Getpid())), line)
	}
	if err != nil && !reported {
		reported = true
		fmt.Fprintf(os.Stderr, "cleanup-e2e: the time budget is not recorded (%v)\n", err)
	}
}

func appendLine(path string, line []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return errors.Join(err, f.Close())
}
