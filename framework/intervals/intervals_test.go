package intervals

import (
	"strings"
	"testing"
	"time"
)

func TestScaleMultipliesEveryTimeout(t *testing.T) {
	t.Setenv("CLEANUP_E2E_WAIT_SCALE", "")
	if got := Get(CSVSucceeded); got != 3*time.Minute {
		t.Fatalf("default csv-succeeded %v", got)
	}
	t.Setenv("CLEANUP_E2E_WAIT_SCALE", "2.5")
	if got := Get(Leftovers); got != 75*time.Second {
		t.Fatalf("scaled leftovers %v, want 75s", got)
	}
	if got := Or(10*time.Second, Leftovers); got != 10*time.Second {
		t.Fatalf("an explicit timeout must not be scaled: %v", got)
	}
	if got := Scaled(10 * time.Second); got != 25*time.Second {
		t.Fatalf("Scaled(10s) at 2.5: %v, want 25s", got)
	}
	for n, d := range All() {
		if d <= 0 {
			t.Errorf("%s: %v", n, d)
		}
	}
}

func TestABadScaleNamesTheVariable(t *testing.T) {
	t.Setenv("CLEANUP_E2E_WAIT_SCALE", "fast")
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), `CLEANUP_E2E_WAIT_SCALE="fast"`) {
			t.Fatalf("want a panic naming the variable and value, got %v", r)
		}
	}()
	Scale()
}
