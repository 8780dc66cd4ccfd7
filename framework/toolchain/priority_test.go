package toolchain

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// While every slot is held, a waiting start of a higher priority gets the next free slot before one of
// a lower priority that began to wait earlier, unless that one has waited longer than the difference
// of their priorities in seconds; a dead waiter's file (not locked) holds no one back and is removed.
func TestAWaitingStartOfAHigherPriorityGetsTheNextSlot(t *testing.T) {
	dir := ownSlots(t)
	var held []func()
	for range slotCount() {
		release, err := startSlot(0, nil)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	got := make(chan int, 2)
	waitFor := func(priority int) {
		release, err := startSlot(priority, nil)
		if err != nil {
			t.Error(err)
			return
		}
		got <- priority
		time.Sleep(200 * time.Millisecond) // holds it while the test looks at who else got one
		release()
	}
	go waitFor(1)
	queued(t, dir, 1)
	go waitFor(60)
	queued(t, dir, 2)
	held[0]()
	if first := <-got; first != 60 {
		t.Fatalf("the start of priority %d got the freed slot while one of priority 60 waited", first)
	}
	select {
	case p := <-got:
		t.Fatalf("the start of priority %d got a slot while none was free", p)
	case <-time.After(100 * time.Millisecond):
	}
	if p := <-got; p != 1 { // once priority 60 released its slot
		t.Fatalf("then %d, want 1", p)
	}
	// A start of priority 0 that has waited 1.5 s is ahead of one of priority 1 that just began.
	release, err := startSlot(0, nil) // every slot held again, once priority 1 has let its go
	if err != nil {
		t.Fatal(err)
	}
	held[0] = release
	go waitFor(0)
	queued(t, dir, 1)
	time.Sleep(1500 * time.Millisecond)
	go waitFor(1)
	queued(t, dir, 2)
	held[1]()
	if first := <-got; first != 0 {
		t.Fatalf("the start of priority %d got the freed slot; the one of priority 0 had waited longer than their difference", first)
	}
	<-got
	for _, release := range append(held[:1], held[2:]...) {
		release()
	}

	// A waiter that died: its file is there, nobody holds its lock.
	dead := filepath.Join(waitingDir(dir), "99-1-dead") // a place ahead of any other
	if err := os.WriteFile(dead, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		release, err := startSlot(0, nil)
		if err == nil {
			release()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a free slot was not taken while a dead waiter's file of a higher priority lay there")
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead waiter's file is still there (%v)", err)
	}
	if left, _ := os.ReadDir(waitingDir(dir)); len(left) != 0 {
		t.Errorf("waiters' files left after every start got its slot: %v", left)
	}
}

// queued waits until n starts wait in dir's queue.
func queued(t *testing.T, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, _ := os.ReadDir(waitingDir(dir))
		if len(entries) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d starts queued after 10 s, want %d", len(entries), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
