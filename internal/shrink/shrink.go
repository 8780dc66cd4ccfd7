// Package shrink reduces a failing list of test operations to a shorter one that still fails. The
// randomized lifecycle tests of both cleanup controllers (OLM v0's pkg/operandcleanup, OLM v1's
// pkg/extensioncleanup) replay seeded operation lists on a real control plane; what they share is only
// this search, so it lives here rather than in either test package.
package shrink

// Chunks removes chunks of ops (halves, then quarters, ... single operations) as long as what is left
// still fails, spending at most budget calls of fails. fails re-runs a candidate list from scratch and
// returns its violations (none: the candidate passes). Chunks returns the shortest failing list found and
// its violations, starting from ops and violations, the original failure.
func Chunks[T any](ops []T, violations []string, budget int, fails func([]T) []string) ([]T, []string) {
	for size := len(ops) / 2; size >= 1 && budget > 0; size /= 2 {
		for i := 0; i+size <= len(ops) && budget > 0; {
			cand := append(append([]T(nil), ops[:i]...), ops[i+size:]...)
			budget--
			if v := fails(cand); len(v) > 0 {
				ops, violations = cand, v
				continue
			}
			i += size
		}
	}
	return ops, violations
}
