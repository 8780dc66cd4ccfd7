package extensioncleanup_test

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs at most 4 of the envtest tests (each t.Parallel) at once: each spends most of its time
// waiting on its control plane, OLM v1 and the garbage collector, not on the CPU; more at once would start
// as many control planes as the machine has cores. -test.parallel given on the command line wins.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "4")
	}
	os.Exit(m.Run())
}
