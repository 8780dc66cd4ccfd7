// Package pairedtests has two parallel tests that each wait for the other to start: they pass only when
// they run side by side (-test.parallel of 2 or more).
package pairedtests

import (
	"flag"
	"testing"
	"time"
)

var started = map[string]chan struct{}{"TestLeft": make(chan struct{}), "TestRight": make(chan struct{})}

func waitForThe(t *testing.T, other string) {
	t.Parallel()
	close(started[t.Name()])
	select {
	case <-started[other]:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not start while %s ran: parallel tests ran one at a time (-test.parallel=%s)",
			other, t.Name(), flag.Lookup("test.parallel").Value)
	}
}

func TestLeft(t *testing.T) { waitForThe(t, "TestRight") }

func TestRight(t *testing.T) { waitForThe(t, "TestLeft") }
