package seeded

import (
	"slices"
	"strings"
	"testing"
)

func TestReadAppliesTheVariablesOverTheDefaults(t *testing.T) {
	def := Config{Seed: 1, Sequences: 40, Steps: 18, Shrink: 12}
	got, err := Read(def)
	if err != nil || got.Seed != 1 || got.Sequences != 40 || got.Steps != 18 || got.Shrink != 12 || got.OnlySteps != nil {
		t.Fatalf("no variable set: got %+v, %v; want the defaults %+v", got, err, def)
	}

	t.Setenv(EnvSeed, "4711")
	got, _ = Read(def)
	if got.Seed != 4711 || got.Sequences != 1 || !slices.Equal(slices.Collect(got.Seeds()), []int64{4711}) {
		t.Fatalf("%s=4711 alone: got seed %d, %d sequences; want the one sequence the seed names", EnvSeed, got.Seed, got.Sequences)
	}

	t.Setenv(EnvSequences, "3")
	t.Setenv(EnvSteps, "30")
	t.Setenv(EnvShrink, "0")
	t.Setenv(EnvOnlySteps, "4, 5,9")
	got, err = Read(def)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Collect(got.Seeds()), []int64{4711, 4712, 4713}) || got.Steps != 30 || got.Shrink != 0 {
		t.Fatalf("got seeds %v, %d steps, shrink %d; want 4711..4713, 30, 0", slices.Collect(got.Seeds()), got.Steps, got.Shrink)
	}
	if len(got.OnlySteps) != 3 || !got.OnlySteps[4] || !got.OnlySteps[5] || !got.OnlySteps[9] {
		t.Fatalf("%s=\"4, 5,9\": got %v", EnvOnlySteps, got.OnlySteps)
	}
	if r := got.Replay(4712); r != "CLEANUP_E2E_SEED=4712 CLEANUP_E2E_STEPS=30" {
		t.Fatalf("Replay(4712) = %q", r)
	}
}

func TestReadClockSeedWhenTheDefaultHasNone(t *testing.T) {
	got, err := Read(Config{Sequences: 2})
	if err != nil || got.Seed < 0 || got.Seed >= 1_000_000 {
		t.Fatalf("got seed %d, %v; want one from the clock in [0, 1e6)", got.Seed, err)
	}
	if r := (Config{}).Replay(7); r != "CLEANUP_E2E_SEED=7" {
		t.Fatalf("a test without a length: Replay(7) = %q", r)
	}
}

func TestReadNamesTheBadVariable(t *testing.T) {
	for name, value := range map[string]string{EnvSeed: "x1", EnvSequences: "0", EnvSteps: "-3", EnvShrink: "many", EnvOnlySteps: "4,five"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			_, err := Read(Config{Seed: 1, Sequences: 1})
			if err == nil || !strings.Contains(err.Error(), name+`="`+value+`"`) {
				t.Fatalf("%s=%q: got error %v; want one naming the variable and its value", name, value, err)
			}
		})
	}
}
