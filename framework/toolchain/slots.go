package toolchain

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Start slots: at most one envtest control plane starts per CPU (slotCount) at a time, across every
// process that starts one (the test binaries of make test, the example consumers, two make test side by
// side). A start is a burst of CPU (etcd and kube-apiserver ≈ 2–3 s of it with OLM's CRDs); sixteen at
// once on 2 cores each took minutes and ran out of their timeout, while one after the other each takes
// seconds — the same work in less time, and a wait for a slot uses no CPU. The timeout of a start
// counts from when it has its slot.

// slotsDir holds one lock file per slot, for every user of the machine's temp dir (a variable for the
// tests, which use slots of their own). Not under $TMPDIR/cleanup-e2e: every provider's start reaps
// the directories there whose owner is gone (process.ReapStale), and took this one, locks and all, for
// a dead run's — after which the next starts locked new files beside the held ones.
var slotsDir = func() string { return filepath.Join(os.TempDir(), "cleanup-e2e-start-slots") }

// slotPoll is how often a start waiting for a slot tries them again.
const slotPoll = 50 * time.Millisecond

// slotCount is how many slots the machine has: one per CPU the process gets. Fixed, not a knob: three
// on 2 cores gave the same mean (docs/performance.md).
func slotCount() int {
	return cpus()
}

// cpus is the CPUs this process gets (defaultGOMAXPROCS), read once per process: each start asks,
// and reading it sets GOMAXPROCS twice.
var cpus = sync.OnceValue(defaultGOMAXPROCS)

// defaultGOMAXPROCS is Go's default GOMAXPROCS, the machine's CPUs or, in a container with a CPU
// limit, the limit (rounded up, at least 2; for a main module of go ≥ 1.25, else GODEBUG
// containermaxprocs=0 keeps runtime.NumCPU). runtime.NumCPU counts the host's CPUs there: a CI pod
// limited to 2 CPUs on a 64-CPU node would start 64 control planes at once. The tests' processes run
// with GOMAXPROCS set (make test: 1), so the default is read by setting it, and the caller's setting
// is put back.
func defaultGOMAXPROCS() int {
	set := runtime.GOMAXPROCS(0)
	runtime.SetDefaultGOMAXPROCS()
	n := runtime.GOMAXPROCS(0)
	if n != set {
		runtime.GOMAXPROCS(set)
	}
	return n
}

// startSlot takes one of the machine's slotCount() slots, waiting while every one is held, and
// returns its release. A slot is an flock on its file: the kernel releases it when the holder exits, so
// a killed run never keeps one. waiting is called once if the start has to wait.
func startSlot(waiting func(slots int)) (release func(), err error) {
	dir := slotsDir()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("start slots: %w", err)
	}
	n := slotCount()
	files := make([]*os.File, n)
	closeAll := func(but int) {
		for j, o := range files {
			if j != but && o != nil {
				o.Close()
			}
		}
	}
	for i := range n {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("slot-%d", i)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			closeAll(-1)
			return nil, fmt.Errorf("start slots: %w", err)
		}
		files[i] = f
	}
	for waited := false; ; waited = true {
		for i, f := range files {
			err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				closeAll(i)
				return func() { f.Close() }, nil // closing the file releases its lock
			}
			if err != syscall.EWOULDBLOCK {
				closeAll(-1)
				return nil, fmt.Errorf("start slots: lock %s: %w", f.Name(), err)
			}
		}
		if !waited && waiting != nil {
			waiting(n)
		}
		time.Sleep(slotPoll)
	}
}
