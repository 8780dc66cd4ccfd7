package deletestate

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/internal/seeded"
)

// The defaults stay within a few seconds of `go test`; internal/seeded's variables replay a printed
// seed or run more and longer sequences (scripts/soak.sh).
func TestDeleteStateSequencesFollowTheModel(t *testing.T) {
	cfg, err := seeded.Read(seeded.Config{Sequences: 100, Steps: 40})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for seed := range cfg.Seeds() {
		seq := generate(rand.New(rand.NewSource(seed)), cfg.Steps)
		at, err := run(ctx, seq)
		if err == nil {
			continue
		}
		shrunk := shrink(ctx, seq[:at+1])
		_, shrunkErr := run(ctx, shrunk)
		t.Fatalf("the applier diverges from the reference model (seed %d, replay with %s go test ./pkg/payload/applier/deletestate -run %s):\n"+
			"original failure at step %d: %v\nshortest failing sequence found (%d of %d steps):\n%s\n=> %v",
			seed, cfg.Replay(seed), t.Name(), at+1, err, len(shrunk), at+1, describe(shrunk), shrunkErr)
	}
	t.Logf("%d sequences of %d steps (seeds %d..%d) agree with the model", cfg.Sequences, cfg.Steps, cfg.Seed, cfg.Seed+int64(cfg.Sequences)-1)
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
