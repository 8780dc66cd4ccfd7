package main

import (
	"testing"
	"time"
)

func TestTheLargerHeapOnlyWhereAFirstTouchIsCheap(t *testing.T) {
	for _, c := range []struct {
		cost time.Duration
		want string
	}{
		{1600 * time.Nanosecond, large},   // the machine where 400 won
		{cheapFault, large},               // the bound itself
		{cheapFault + 1, moderate},        // just over
		{12 * time.Microsecond, moderate}, // the machine where 200 won
	} {
		if got := choose(c.cost); got != c.want {
			t.Errorf("choose(%s) = GOGC %s, want %s", c.cost, got, c.want)
		}
	}
}

func TestFaultCostMeasuresSomething(t *testing.T) {
	cost, err := faultCost(1<<20, 2)
	if err != nil {
		t.Fatal(err)
	}
	// A page fault takes longer than nothing and less than a millisecond on any machine this runs on.
	if cost <= 0 || cost > time.Millisecond {
		t.Fatalf("faultCost = %s per page, want between 0 and 1ms", cost)
	}
}
