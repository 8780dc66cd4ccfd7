// Package failsatline has one failing test: a kept binary must still name the failing line.
package failsatline

import "testing"

func TestFails(t *testing.T) {
	t.Error("the line a user looks for")
}
