package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// The disruptive lock: one flock per shared cluster, next to the run lock, for what changes the cluster
// for the other runs while it is there (stack.Components.Disruptive: the ClusterOperator CRD — a cluster
// serving config.openshift.io/v1 makes a restarted olm-operator take it for OpenShift and wait for a
// Proxy API it lacks). Such a run used to have the cluster alone from Start to Stop, so nothing could
// run beside it. Now its specs may run beside other runs' (make e2e still runs e2e/cvo last: on 2 cores
// that was faster), and the lock keeps the one thing that matters: no other run's alone section — a
// spec that stops and starts OLM — while it is there. Rules:
//   - a run that wants something disruptive holds the lock exclusively (its own open file: runs of one
//     process exclude each other too) from before its stack ensures it until its Stop removed it, which
//     happens while the run is still in its section;
//   - the lock is only ever tried, never waited on with a section held: a run that finds it held waits
//     to have the cluster alone (alone lets the holder go first, so it returns once the holder ended),
//     then takes it;
//   - alone, once it has the sections lock exclusively, tries the lock: held by another run means that
//     run waits to be alone too (it is in no section), so alone goes back to a section and waits again.
//     A run's own disruptive component may stay while that run is alone.

// disruptivePath is the cluster's disruptive lock, next to its run lock (sections).
func disruptivePath(sections string) string {
	return strings.TrimSuffix(sections, ".lock") + ".disruptive.lock"
}

// disruptiveHeld reports whether a run holds the disruptive lock of the cluster whose sections lock is
// path.
func disruptiveHeld(path string) (bool, error) {
	f, err := openLock(disruptivePath(path))
	if err != nil {
		return false, err
	}
	defer f.Close()
	got, err := tryExclusive(f)
	if got {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return !got && err == nil, err
}

// tryExclusive takes f's flock exclusively if nobody holds it, without waiting.
func tryExclusive(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return true, nil
}

// useDisruptive takes the disruptive lock for the run, before its stack ensures what (the disruptive
// components). When another run holds it, the run first waits to have the cluster alone: that run
// ends first, and no run can take it meanwhile (a run takes it in its section).
func (r *runHold) useDisruptive(ctx context.Context, what string) error {
	if r.disruptive != nil {
		return nil
	}
	f, err := openLock(disruptivePath(r.p.path))
	if err != nil {
		return err
	}
	ok, err := tryExclusive(f)
	for err == nil && !ok {
		var back func()
		if back, err = r.alone(ctx, "another run has "+what+" on the shared cluster, and this run needs it too"); err != nil {
			err = fmt.Errorf("wait for the run that has %s on the shared cluster to end: %w", what, err)
			break
		}
		ok, err = tryExclusive(f) // alone: no other run holds it, and none can take it meanwhile
		back()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("disruptive lock: %w", err)
	}
	r.disruptive = f
	r.log.Info("holds the disruptive lock: other runs' specs that need the cluster alone wait for this run's end", "for", what)
	return nil
}

// releaseDisruptive drops the run's disruptive lock, once its Stop removed what it held it for.
func (r *runHold) releaseDisruptive() {
	if r.disruptive != nil {
		unlockFile(r.disruptive)
		r.disruptive = nil
	}
}

// holdsDisruptive reports whether the run holds the disruptive lock.
func (r *runHold) holdsDisruptive() bool { return r.disruptive != nil }
