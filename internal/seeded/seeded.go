// Package seeded gives every seeded randomized test of this repository the same variables and the same
// replay line (docs/safety.md): a seed printed by any of them replays with CLEANUP_E2E_SEED, whichever
// test printed it, and a soak sets the same four names for each. The tests differ only in their
// defaults.
package seeded

import (
	"fmt"
	"iter"
	"os"
	"strconv"
	"strings"
	"time"
)

// The variables, read by Read.
const (
	// EnvSeed is the first seed; sequence i runs seed+i. Set, it runs one sequence unless EnvSequences
	// asks for more: a failure's seed replays alone.
	EnvSeed = "CLEANUP_E2E_SEED"
	// EnvSequences is how many sequences (seeds) to run.
	EnvSequences = "CLEANUP_E2E_SEQUENCES"
	// EnvSteps is a sequence's length, in the test's own unit (operations; rounds of install, operations
	// and uninstall in OLM v1's lifecycle test).
	EnvSteps = "CLEANUP_E2E_STEPS"
	// EnvShrink is how many re-runs a failure may spend on finding a shorter failing sequence.
	EnvShrink = "CLEANUP_E2E_SHRINK"
	// EnvOnlySteps keeps only the listed steps of the generated sequence ("4,5,9"), as a shrunk
	// failure prints them, in the tests that number their steps.
	EnvOnlySteps = "CLEANUP_E2E_ONLY_STEPS"
)

// Config is what a test runs: its defaults, or what the variables say.
type Config struct {
	Seed      int64 // the first seed; 0 in a test's defaults means the clock
	Sequences int
	Steps     int // 0: the test has no length to set
	Shrink    int
	OnlySteps map[int]bool // nil: every step
}

// Read is def with the variables that are set applied; an error names the variable and its value.
func Read(def Config) (Config, error) {
	c := def
	if c.Seed == 0 {
		c.Seed = time.Now().UnixNano() % 1_000_000 // short enough to type
	}
	if s := strings.TrimSpace(os.Getenv(EnvSeed)); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return c, fmt.Errorf("%s=%q: want an integer seed, as a failure prints it", EnvSeed, s)
		}
		c.Seed, c.Sequences = n, 1
	}
	for _, v := range []struct {
		name string
		to   *int
		min  int
	}{{EnvSequences, &c.Sequences, 1}, {EnvSteps, &c.Steps, 1}, {EnvShrink, &c.Shrink, 0}} {
		s := strings.TrimSpace(os.Getenv(v.name))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < v.min {
			return c, fmt.Errorf("%s=%q: want an integer ≥ %d", v.name, s, v.min)
		}
		*v.to = n
	}
	if s := strings.TrimSpace(os.Getenv(EnvOnlySteps)); s != "" {
		c.OnlySteps = map[int]bool{}
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return c, fmt.Errorf("%s=%q: want step numbers separated by commas, e.g. 4,5,9", EnvOnlySteps, s)
			}
			c.OnlySteps[n] = true
		}
	}
	return c, nil
}

// Seeds are the seeds c runs, in order.
func (c Config) Seeds() iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for i := range c.Sequences {
			if !yield(c.Seed + int64(i)) {
				return
			}
		}
	}
}

// Replay is the variables that run seed's sequence again as c ran it, for a failure to print before
// its go test command.
func (c Config) Replay(seed int64) string {
	s := fmt.Sprintf("%s=%d", EnvSeed, seed)
	if c.Steps > 0 {
		s += fmt.Sprintf(" %s=%d", EnvSteps, c.Steps)
	}
	return s
}
