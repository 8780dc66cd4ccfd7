package testenv

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestAloneWaitsForAnotherRunsDisruptiveComponent: a run with something disruptive (the ClusterOperator
// CRD) runs beside the others; another run's alone section (a spec that restarts OLM) waits until that
// run removed it and ended, and lets that run's own alone section go first instead of taking the
// cluster while the component is there. Between two processes and between two runs of one process.
func TestAloneWaitsForAnotherRunsDisruptiveComponent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		sameProcess bool
	}{{"two processes", false}, {"one process", true}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cluster.run.lock")
			ctx := context.Background()
			pa, pb := newProcess(), newProcess()
			if tc.sameProcess {
				pb = pa
			}
			a := mustLock(t, pa, path, logr.Discard())
			within(t, 5*time.Second, "the first run with something disruptive", func() {
				if err := a.useDisruptive(ctx, "the CRD"); err != nil {
					t.Fatal(err)
				}
			})
			log, said := loggerSaying("letting it finish first")
			b := mustLock(t, pb, path, log)
			var back func()
			var returned atomic.Bool
			bAlone := blocked(t, "another run's alone section while the disruptive run is in a section", func() {
				var err error
				if back, err = b.alone(ctx, "restarts OLM"); err != nil {
					t.Error(err)
				}
				returned.Store(true)
			})
			// The disruptive run's own Serial spec: b waits to be alone too, and must let it in.
			within(t, 5*time.Second, "the disruptive run's own alone section while another run waits to be alone", func() {
				aBack, err := a.alone(ctx, "its own Serial spec")
				if err != nil {
					t.Fatal(err)
				}
				aBack()
			})
			if !tc.sameProcess { // (in one process, a may get in first: then b never had to let it)
				select {
				case <-said:
				case <-time.After(5 * time.Second):
					t.Fatal("the waiting run never said it let the disruptive run go first")
				}
			}
			time.Sleep(300 * time.Millisecond) // b still waits: a is back in its section, its component there
			if returned.Load() {
				t.Fatal("alone returned while another run's disruptive component was there")
			}
			// Env.Stop: the component goes while the run is in its section, then the run ends.
			a.releaseDisruptive()
			if err := a.release(ctx, "", nil); err != nil {
				t.Fatal(err)
			}
			bAlone()
			if back == nil {
				t.Fatal("alone did not return once the disruptive run ended")
			}
			back()
			_ = b.release(ctx, "", nil)
		})
	}
}

// TestSecondDisruptiveRunWaitsForTheFirst: two runs that both want the disruptive component take turns
// (the first one's Stop removes it), and the second says what it waits for; a run that already holds
// the lock takes it again at once.
func TestSecondDisruptiveRunWaitsForTheFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cluster.run.lock")
	ctx := context.Background()
	a := mustLock(t, newProcess(), path, logr.Discard())
	if err := a.useDisruptive(ctx, "the CRD"); err != nil {
		t.Fatal(err)
	}
	within(t, time.Second, "taking the lock it holds", func() {
		if err := a.useDisruptive(ctx, "the CRD"); err != nil {
			t.Fatal(err)
		}
	})
	log, said := recordingLog()
	c := mustLock(t, newProcess(), path, log)
	got := blocked(t, "a second run wanting the disruptive component", func() {
		if err := c.useDisruptive(ctx, "the CRD"); err != nil {
			t.Error(err)
		}
	})
	a.releaseDisruptive()
	_ = a.release(ctx, "", nil)
	got()
	if !c.holdsDisruptive() {
		t.Fatal("the second run does not hold the disruptive lock after the first ended")
	}
	if !strings.Contains(strings.Join(said(), "\n"), "another run has the CRD on the shared cluster") {
		t.Errorf("the waiting run's log does not say what it waits for: %q", said())
	}
	if held, err := disruptiveHeld(path); !held || err != nil {
		t.Errorf("disruptiveHeld: %v, %v while a run holds the lock", held, err)
	}
	_ = c.release(ctx, "", nil)
	if held, err := disruptiveHeld(path); held || err != nil {
		t.Errorf("disruptiveHeld: %v, %v after the last holder ended (release drops it)", held, err)
	}
}
