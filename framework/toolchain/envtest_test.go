package toolchain

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cleanup-e2e/cleanup-e2e/framework/process"
)

// fakeEtcd, set in the environment of this test binary run again, makes it an etcd that only answers
// its health check (TestMain): enough for envtest to go on to kube-apiserver.
const fakeEtcd = "TOOLCHAIN_TEST_FAKE_ETCD"

// slotHolder, set in the environment of this test binary run again, makes it a process that takes every
// start slot of the directory it names, says so and sleeps until it is killed (TestMain).
const slotHolder = "TOOLCHAIN_TEST_HOLD_SLOTS_IN"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEtcd) != "" {
		serveEtcdHealth(os.Args[1:])
		return
	}
	if dir := os.Getenv(slotHolder); dir != "" {
		slotsDir = func() string { return dir }
		for range slotCount() {
			if _, err := startSlot(nil); err != nil {
				fmt.Println(err)
				os.Exit(1)
			}
		}
		fmt.Println("holding")
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

func serveEtcdHealth(args []string) {
	for _, a := range args {
		if a == "--help" {
			os.Exit(0)
		}
		if v, ok := strings.CutPrefix(a, "--listen-client-urls="); ok {
			// a list, as etcd takes it: envtest's TCP URL first, then the socket (etcdOverSocket)
			u, err := url.Parse(strings.Split(v, ",")[0])
			if err != nil {
				os.Exit(2)
			}
			http.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"health":"true"}`) })
			_ = http.ListenAndServe(u.Host, nil)
		}
	}
	os.Exit(2)
}

// A kube-apiserver that does not answer within its timeout is stopped and not started again: envtest's
// own Start would kill and restart it five times, each from nothing. The error says how long it had and
// how to give it longer.
func TestAStartOutOfTimeIsNotRestartedAndSaysWhy(t *testing.T) {
	ownSlots(t) // its hung start must not hold one of the machine's
	dir := t.TempDir()
	starts, bin := filepath.Join(dir, "starts"), filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script("etcd", fmt.Sprintf("%s=1 exec %q \"$@\"", fakeEtcd, self))
	// envtest asks each binary for --help first (looking for flags); then this one never answers.
	script("kube-apiserver", fmt.Sprintf("[ \"$1\" = --help ] && exit 0\necho started >> %q\nexec sleep 600", starts))
	// The default timeout, 3 min, scaled to 9 s: the fake etcd (this binary again) must answer within it
	// on a loaded machine (1.8 s was too short beside two make test), and kube-apiserver never does.
	t.Setenv("CLEANUP_E2E_WAIT_SCALE", "0.05")
	e := &crenvtest.Environment{BinaryAssetsDirectory: bin, ControlPlaneStopTimeout: 5 * time.Second}
	e.ControlPlane.Etcd = &crenvtest.Etcd{DataDir: filepath.Join(dir, "etcd")}
	e.ControlPlane.APIServer = &crenvtest.APIServer{CertDir: filepath.Join(dir, "apiserver")}
	for _, d := range []string{e.ControlPlane.Etcd.DataDir, e.ControlPlane.APIServer.CertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	begun := time.Now()
	_, err = StartEnvtest(e)
	took := time.Since(begun)
	if err == nil {
		t.Fatal("a kube-apiserver that never answers must fail the start")
	}
	t.Logf("the error: %v", err)
	if strings.Contains(err.Error(), "process etcd") {
		t.Fatalf("the fake etcd did not answer its health check within the timeout, so kube-apiserver was never tried: %v", err)
	}
	b, _ := os.ReadFile(starts)
	if n := strings.Count(string(b), "started"); n != 1 {
		t.Errorf("kube-apiserver was started %d times in %s; want once (error: %v)", n, took.Round(time.Second), err)
	}
	if !errors.Is(err, ErrOutOfTime) {
		t.Errorf("the error should be ErrOutOfTime, so that the provider does not start again: %v", err)
	}
	for _, want := range []string{"once, not restarted", "it had 9s", "control-plane-ready × CLEANUP_E2E_WAIT_SCALE=0.05"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error should say %q: %v", want, err)
		}
	}
	if out, _ := exec.Command("pgrep", "-f", dir).Output(); len(out) > 0 {
		t.Errorf("processes of the failed start still run: pids %s", strings.Fields(string(out)))
	}
}

// At most one start per CPU holds a slot at a time, every start gets one in the end, and a slot held by
// a process that was killed is free again (the kernel drops its lock).
func TestStartSlotsLetOneStartPerCPUAtATime(t *testing.T) {
	dir := ownSlots(t)
	slots := slotCount() // one per CPU the process gets
	var (
		wg            sync.WaitGroup
		holding, most atomic.Int32
		waited        atomic.Int32
	)
	for range 3 * slots {
		wg.Go(func() {
			release, err := startSlot(func(int) { waited.Add(1) })
			if err != nil {
				t.Error(err)
				return
			}
			n := holding.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(50 * time.Millisecond) // a start's burst
			holding.Add(-1)
			release()
		})
	}
	wg.Wait()
	if m := most.Load(); m > int32(slots) {
		t.Errorf("%d starts held a slot at once; want at most %d (one per CPU)", m, slots)
	}
	if waited.Load() == 0 {
		t.Errorf("none of %d starts waited for one of %d slots", 3*slots, slots)
	}

	holder := exec.Command(os.Args[0])
	holder.Env = append(os.Environ(), slotHolder+"="+dir)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 64)
	n, _ := out.Read(line)
	if !strings.HasPrefix(string(line[:n]), "holding") {
		t.Fatalf("the holder did not take the slots: %q", line[:n])
	}
	took := make(chan error, 1)
	go func() {
		release, err := startSlot(nil)
		if err == nil {
			release()
		}
		took <- err
	}()
	select {
	case err := <-took:
		t.Fatalf("a start got a slot while another process held all %d: %v", slots, err)
	case <-time.After(300 * time.Millisecond): // a window in which it must still wait
	}
	_ = holder.Process.Kill()
	_ = holder.Wait()
	if err := <-took; err != nil {
		t.Fatalf("once the holder was killed: %v", err)
	}
}

// The slots are one per CPU the process gets, read without changing its GOMAXPROCS.
func TestStartSlotsAreOnePerCPU(t *testing.T) {
	set := runtime.GOMAXPROCS(0) // make test runs this with GOMAXPROCS=1
	perCPU := defaultGOMAXPROCS()
	if got := runtime.GOMAXPROCS(0); got != set {
		t.Errorf("reading the CPUs changed GOMAXPROCS from %d to %d", set, got)
	}
	if perCPU < 1 || perCPU > runtime.NumCPU() {
		t.Errorf("defaultGOMAXPROCS() = %d, want between 1 and the %d CPUs of the machine", perCPU, runtime.NumCPU())
	}
	if c := cpus(); c != perCPU {
		t.Errorf("cpus() = %d, want Go's default GOMAXPROCS %d", c, perCPU)
	}
	if got := slotCount(); got != perCPU {
		t.Errorf("%d slots, want one per CPU: %d", got, perCPU)
	}
}

// ownSlots gives the test start slots of its own, apart from the machine's (which make test's other
// packages use meanwhile), and returns their directory.
func ownSlots(t *testing.T) string {
	dir := t.TempDir()
	saved := slotsDir
	slotsDir = func() string { return dir }
	t.Cleanup(func() { slotsDir = saved })
	return dir
}

// A held slot survives a provider's start: the start reaps the work dirs of dead runs under
// $TMPDIR/cleanup-e2e (framework/cluster/envtest's default work root), and the slots' directory was
// once among them (a pairs hunt's log: "reaped work dirs of runs that died" [.../start-slots]).
func TestAHeldStartSlotSurvivesTheReapOfDeadRunsWorkDirs(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	release, err := startSlot(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	dir := slotsDir()
	old := time.Now().Add(-time.Hour) // a directory of the work root untouched for a minute is a dead run's
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := process.ReapStale(filepath.Join(os.TempDir(), "cleanup-e2e")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the start slots' directory %s did not survive the reap of dead runs' work dirs: %v", dir, err)
	}
}
