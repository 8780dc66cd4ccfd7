// Command gogc prints the GOGC that make test gives its processes on this machine, chosen by what a
// memory page touched for the first time costs here. A larger GOGC lets a heap grow further between
// collections: less collector CPU, more pages touched. Which side wins depends on the machine: on a VM
// where a first touch cost 12-14 µs, GOGC=200 beat 400 (a warm make test ≈ 5-8 % shorter), and on one
// where it cost 1.6 µs, 400 beat 200 (the API server ≈ 10 % less CPU; docs/performance.md).
// Standard error says what was measured, so a run's log shows why it got its GOGC.
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

const (
	// cheapFault is the cost of a first touch under which the larger heap pays: between the two
	// machines measured (1.6 µs: 400 won; 12 µs: 200 won).
	cheapFault = 5 * time.Microsecond
	large      = "400"
	moderate   = "200"
	// probeBytes is touched three times; the cheapest round counts (another process's burst must not
	// make a fast machine look slow). 3 × 32 MiB is ≈ 25,000 faults: ≈ 40 ms where a page is cheap,
	// ≈ 0.3 s where it is dear.
	probeBytes = 32 << 20
)

func main() {
	cost, err := faultCost(probeBytes, 3)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gogc: could not measure a page fault (%v); GOGC=%s\n", err, moderate)
		fmt.Println(moderate)
		return
	}
	gogc := choose(cost)
	fmt.Fprintf(os.Stderr, "gogc: a page touched for the first time costs %s here: GOGC=%s (%s where it costs at most %s, else %s)\n",
		cost.Round(10*time.Nanosecond), gogc, large, cheapFault, moderate)
	fmt.Println(gogc)
}

// choose is the GOGC for a machine whose first touch of a page costs cost.
func choose(cost time.Duration) string {
	if cost <= cheapFault {
		return large
	}
	return moderate
}

// faultCost maps size bytes of fresh anonymous memory rounds times, touches one byte per page, and
// returns the cheapest round's time per page.
func faultCost(size, rounds int) (time.Duration, error) {
	page := os.Getpagesize()
	best := time.Duration(0)
	for range rounds {
		mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		for i := 0; i < size; i += page {
			mem[i] = 1
		}
		per := time.Since(start) / time.Duration(size/page)
		if err := syscall.Munmap(mem); err != nil {
			return 0, err
		}
		if best == 0 || per < best {
			best = per
		}
	}
	return best, nil
}
