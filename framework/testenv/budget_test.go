package testenv

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/budget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// deletingProvider is a kind cluster that is not kept: its Stop deletes it.
type deletingProvider struct{ workDirProvider }

func (deletingProvider) DeletesClusterOnStop() bool { return true }
func (deletingProvider) Stop(context.Context) error { return nil }
func (deletingProvider) Kind() string               { return "kind" }

// The time budget shows a shared cluster's serial tail: how long a run waited to be the last one alive
// (another run still used the cluster) and how long its teardown took, under "teardown <run name>".
func TestStopOnASharedClusterTimesTheWaitToBeLastAndTheTeardown(t *testing.T) {
	ctx := context.Background()
	env, other := runBesideAnother(t)
	wait := blocked(t, "deleting the cluster while another run uses it", func() {
		if err := env.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	if err := other.release(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	wait()
	phases := map[string]float64{}
	for _, e := range readBudget(t) {
		if e.Spec == "teardown mine" {
			phases[e.Phase] = e.Seconds
		}
	}
	if len(phases) != 2 || phases["last-run"] < 0.3 {
		t.Fatalf("budget of the run's end %v: want last-run (≥ 0.3 s: blocked waited that long) and teardown", phases)
	}
}

// So does a spec's wait to have the shared cluster alone (a Serial spec, e2eframework's Alone), under
// the why it gives.
func TestAloneOnASharedClusterTimesTheWait(t *testing.T) {
	ctx := context.Background()
	env, other := runBesideAnother(t)
	var done func()
	wait := blocked(t, "having the cluster alone while another run's spec is in flight", func() {
		var err error
		if done, err = env.Alone(ctx, "Serial spec x"); err != nil {
			t.Error(err)
		}
	})
	if err := other.release(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	wait()
	done()
	var waited []float64
	for _, e := range readBudget(t) {
		if e.Spec == "Serial spec x" && e.Phase == "cluster-alone" {
			waited = append(waited, e.Seconds)
		}
	}
	if len(waited) != 1 || waited[0] < 0.3 {
		t.Fatalf("cluster-alone entries of the spec %v: want one of ≥ 0.3 s (blocked waited that long)", waited)
	}
}

// runBesideAnother starts a run named "mine" on a shared cluster (its Env) and another process's run
// on it, with the time budget under a fresh $ARTIFACTS.
func runBesideAnother(t *testing.T) (mine *Env, other *runHold) {
	t.Helper()
	t.Setenv("ARTIFACTS", t.TempDir())
	path := filepath.Join(t.TempDir(), "c.run.lock")
	hold, err := newProcess().lockRun(context.Background(), path, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	if other, err = newProcess().lockRun(context.Background(), path, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	return &Env{Environment: cluster.Environment{Provider: deletingProvider{}}, hold: hold, name: "mine"}, other
}

func readBudget(t *testing.T) []budget.Entry {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(budget.Dir(), "*.jsonl"))
	var out []budget.Entry
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var e budget.Entry
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		fh.Close()
	}
	return out
}
