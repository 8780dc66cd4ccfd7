package deletestate

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Knobs: CLEANUP_E2E_SEED replays one sequence (the seed a failure prints); CLEANUP_E2E_SEQUENCES
// and CLEANUP_E2E_SEQUENCE_STEPS run more or longer sequences than the default, which stays within
// a few seconds of `go test`. Both seed and count set run that many from the seed (sequence i uses
// seed+i), so a soak (scripts/soak.sh) names every seed it ran.
const (
	defaultSequences = 100
	defaultSteps     = 40
)

func TestDeleteStateSequencesFollowTheModel(t *testing.T) {
	sequences, steps := envInt(t, "CLEANUP_E2E_SEQUENCES", defaultSequences), envInt(t, "CLEANUP_E2E_SEQUENCE_STEPS", defaultSteps)
	base := time.Now().UnixNano()
	if s := os.Getenv("CLEANUP_E2E_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("CLEANUP_E2E_SEED=%q: want an integer seed as printed by a failure", s)
		}
		base = seed
		if os.Getenv("CLEANUP_E2E_SEQUENCES") == "" {
			sequences = 1
		}
	}
	ctx := context.Background()
	for k := range sequences {
		seed := base + int64(k)
		seq := generate(rand.New(rand.NewSource(seed)), steps)
		at, err := run(ctx, seq)
		if err == nil {
			continue
		}
		shrunk := shrink(ctx, seq[:at+1])
		_, shrunkErr := run(ctx, shrunk)
		t.Fatalf("the applier diverges from the reference model (seed %d, replay with CLEANUP_E2E_SEED=%d):\n"+
			"original failure at step %d: %v\nshortest failing sequence found (%d of %d steps):\n%s\n=> %v",
			seed, seed, at+1, err, len(shrunk), at+1, describe(shrunk), shrunkErr)
	}
	t.Logf("%d sequences of %d steps (seeds %d..%d) agree with the model", sequences, steps, base, base+int64(sequences)-1)
}

// run plays seq on a fresh cluster and applier; it returns the index of the first diverging step.
func run(ctx context.Context, seq []step) (int, error) {
	d := newDriver(ctx)
	for i, s := range seq {
		if err := d.do(s); err != nil {
			return i, fmt.Errorf("%s: %w", s, err)
		}
	}
	return len(seq), nil
}

// shrink deletes steps one at a time while the sequence still fails, until no single deletion does.
func shrink(ctx context.Context, seq []step) []step {
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(seq); i++ {
			candidate := append(append([]step(nil), seq[:i]...), seq[i+1:]...)
			if at, err := run(ctx, candidate); err != nil {
				seq, changed = candidate[:at+1], true
				i--
			}
		}
	}
	return seq
}

func describe(seq []step) string {
	lines := make([]string, len(seq))
	for i, s := range seq {
		lines[i] = fmt.Sprintf("  %2d. %s", i+1, s)
	}
	return strings.Join(lines, "\n")
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}
