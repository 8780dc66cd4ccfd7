package shrink

import (
	"slices"
	"testing"
)

func TestChunksKeepsWhatFails(t *testing.T) {
	ops := []int{1, 2, 3, 4, 5, 6, 7, 8}
	runs := 0
	fails := func(c []int) []string {
		runs++
		if slices.Contains(c, 3) && slices.Contains(c, 8) {
			return []string{"3 and 8"}
		}
		return nil
	}
	got, v := Chunks(ops, []string{"orig"}, 100, fails)
	if !slices.Equal(got, []int{3, 8}) || len(v) != 1 || v[0] != "3 and 8" {
		t.Fatalf("got %v %v after %d runs, want [3 8] [3 and 8]", got, v, runs)
	}
}

func TestChunksBudget(t *testing.T) {
	runs := 0
	got, v := Chunks([]int{1, 2, 3, 4}, []string{"orig"}, 2, func(c []int) []string { runs++; return []string{"always"} })
	if runs != 2 || len(got) != 0 || v[0] != "always" {
		t.Fatalf("runs %d, got %v %v; want 2 runs (the first half dropped, then the second)", runs, got, v)
	}
}
