package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/internal/kindsetup"
)

// A shared cluster (kind, existing) serves several runs at once — the test binaries of `go test ./...`,
// the suites and example consumers of `make e2e` — as long as none of them changes what the others
// stand on. Two flocks per cluster (a run that dies releases them) say who may:
//
//   - The members lock: every run holds it shared from Start to Stop. A run that removes what it
//     installed or what its specs left (the stack's ledger and footprint), or deletes the cluster,
//     waits to hold it exclusively: until no other run is alive, since another run may use what it
//     removes (a run that finds the operand-cleanup controller there uses it and does not own it).
//   - The sections lock: a run holds it shared while its specs run beside other runs' (the spec library
//     gives each case its own namespaces and samples, and the leftovers check only blames an
//     installation for what is linked to it), and exclusively — alone, no other run's specs in flight,
//     though the other runs stay alive — for each spec that acts on the whole cluster (Env.Alone:
//     Ginkgo's Serial specs, e.g. a spec that stops OLM; the spec library's AllNamespaces cases lock only
//     their operator's APIs instead, apilock.go).
//   - The disruptive lock (disruptive.go): a run whose stack has something that changes the cluster for
//     the others while it is there (stack.Components.Disruptive: the ClusterOperator CRD, which makes a
//     restarted olm-operator take the cluster for OpenShift) holds it exclusively from Start until its
//     Stop removed that; its specs run beside other runs'. An alone section of another run waits
//     until no run holds it (it lets that run go first), so a spec that restarts OLM never sees the CRD.
//
// Invariants, checked by TestRunLockRandomizedRunsKeepTheInvariants: while a run is alone, no other run
// is in a section and no other run's disruptive component is there; while a run removes, no other run
// is alive or removing. A run waiting to remove
// keeps new runs from starting (the members lock's turnstile), so a stream of runs cannot starve it. A
// run drops its shared holds before waiting for an exclusive one, so two runs that wait for each
// other's end cannot deadlock. Ginkgo's other processes of a run Connect without the
// lock: process 1 holds it for them, and runs the Serial specs.

// runLockPath is the lock of the cluster in.ProviderName() would use: a kind cluster by its name, an
// existing one by its API server's URL, as the provider resolves the kubeconfig and context (so
// KUBECONFIG unset, ~/.kube/config, a relative path or the context named or current all lock the same
// cluster: keyed on their spelling, two runs on one cluster held different locks, and the first to end
// removed what the other still used). The locks are files of this machine: runs on one cluster from
// several machines or containers do not see each other's. The members lock is next to it.
func runLockPath(in Config) string {
	dir := filepath.Join(os.TempDir(), "cleanup-e2e-kind")
	if in.ProviderName() == "kind" {
		return filepath.Join(dir, kindsetup.ClusterName()+".run.lock")
	}
	h := sha256.Sum256([]byte(existingClusterKey()))
	return filepath.Join(dir, "existing-"+hex.EncodeToString(h[:])[:16]+".run.lock")
}

// existingClusterKey is the API server URL of the existing provider's cluster (the provider loads the
// kubeconfig by the same rules), or, when it cannot be resolved (the provider then fails saying why),
// the raw $KUBECONFIG and context.
func existingClusterKey() string {
	kubeContext := envvar.KubeContext.Get()
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(),
		&clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	if cfg, err := cc.ClientConfig(); err == nil && cfg.Host != "" {
		return "server\x00" + cfg.Host
	}
	return os.Getenv("KUBECONFIG") + "\x00" + kubeContext
}

// runLocks is a process's view of the run locks: a flock conflicts with every other open of the file,
// the same process's too, so the runs of one process (test functions that each start an Env, in
// parallel) share one open file per lock and coordinate among themselves here, by the same rules. A
// test makes several runLocks to play several processes.
type runLocks struct {
	mu    sync.Mutex
	paths map[string]*processLock
}

var processLocks = &runLocks{paths: map[string]*processLock{}}

// processLock is one process's holds of one cluster's locks and its runs on it.
type processLock struct {
	path string
	mu   sync.Mutex
	cond *sync.Cond
	// sections and members are open while holds > 0; how they are held: 0, LOCK_SH or LOCK_EX.
	sections, members         *os.File
	sectionsHeld, membersHeld int
	// holds: the process's runs alive (started, not released); busy: those in a section (not waiting to
	// be alone or to remove); removers: those waiting to remove or removing.
	holds, busy, removers int
	// alone: a run of the process is alone; removing: one is removing.
	alone, removing bool
}

// runHold is one run's hold on its cluster.
type runHold struct {
	p    *processLock
	log  logr.Logger
	once sync.Once
	// disruptive: the run's own hold of the disruptive lock (useDisruptive), nil when it has none.
	disruptive *os.File
}

// lockRun starts a run on the cluster whose sections lock is path, waiting while a run removes or is
// alone (saying so: a wait of minutes would otherwise look like a hang).
func (l *runLocks) lockRun(ctx context.Context, path string, log logr.Logger) (*runHold, error) {
	l.mu.Lock()
	p, ok := l.paths[path]
	if !ok {
		p = &processLock{path: path}
		p.cond = sync.NewCond(&p.mu)
		l.paths[path] = p
	}
	l.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.alone || p.removers > 0 { // this process's runs follow the rules among themselves too
		p.cond.Wait()
	}
	if p.holds == 0 {
		var err error
		if p.members, err = openLock(membersPath(path)); err != nil {
			return nil, err
		}
		if p.sections, err = openLock(path); err != nil {
			p.members.Close()
			return nil, err
		}
		if err = p.take(ctx, log, p.members, &p.membersHeld, syscall.LOCK_SH,
			"a run waits to remove what it installed from the shared cluster; starting after it"); err == nil {
			err = p.take(ctx, log, p.sections, &p.sectionsHeld, syscall.LOCK_SH,
				"another run has the shared cluster alone (a Serial spec, or installing something disruptive); waiting for it")
		}
		if err != nil {
			p.drop()
			return nil, err
		}
	}
	p.holds++
	p.busy++
	return &runHold{p: p, log: log}, nil
}

// alone waits until no other run is in a section, this process's included, and returns to the shared
// section with back. why says in the log what the run needs the cluster alone for.
func (r *runHold) alone(ctx context.Context, why string) (back func(), err error) {
	p := r.p
	stop := context.AfterFunc(ctx, func() { p.mu.Lock(); p.cond.Broadcast(); p.mu.Unlock() })
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.busy--
	p.cond.Broadcast() // a run of the process waiting for the others to leave their sections
	for yielded := false; ; {
		for (p.busy > 0 || p.alone) && ctx.Err() == nil {
			p.cond.Wait()
		}
		if err := ctx.Err(); err != nil {
			for p.alone { // back to a section, which waits for another run of the process that is alone
				p.cond.Wait()
			}
			p.busy++
			p.cond.Broadcast()
			return nil, err
		}
		p.alone = true
		// Other processes (this one's runs all wait meanwhile: they need p.mu).
		if err := p.take(ctx, r.log, p.sections, &p.sectionsHeld, syscall.LOCK_EX, "other runs use the shared cluster; waiting for them to leave it alone ("+why+")"); err != nil {
			r.shareLocked()
			return nil, err
		}
		if r.disruptive != nil {
			break
		}
		held, err := disruptiveHeld(p.path)
		if err != nil {
			r.shareLocked()
			return nil, fmt.Errorf("have the shared cluster alone (%s): %w", why, err)
		}
		if !held {
			break
		}
		// Another run's disruptive component is on the cluster, and that run waits to be alone too (no
		// other run is in a section): it goes first, then this run waits for its end like any other's.
		if !yielded {
			r.log.Info("another run has something disruptive on the shared cluster (disruptive.go); letting it finish first", "for", why)
			yielded = true
		}
		_ = p.take(context.Background(), r.log, p.sections, &p.sectionsHeld, syscall.LOCK_SH, "")
		p.alone = false
		p.cond.Broadcast()
		p.mu.Unlock()
		select { // let it take the sections lock before this run queues for it again
		case <-ctx.Done():
		case <-time.After(lockPoll):
		}
		p.mu.Lock()
	}
	r.log.Info("has the shared cluster alone", "for", why)
	return sync.OnceFunc(func() { p.mu.Lock(); defer p.mu.Unlock(); r.shareLocked() }), nil
}

// shareLocked ends an alone section (or a failed wait for one): back to a shared section. p.mu held.
func (r *runHold) shareLocked() {
	p := r.p
	_ = p.take(context.Background(), r.log, p.sections, &p.sectionsHeld, syscall.LOCK_SH, "")
	p.alone = false
	p.busy++
	p.cond.Broadcast()
}

// release ends the run. With remove, it first waits until no other run is alive (why says for what),
// then runs remove. Idempotent: the second call does nothing.
func (r *runHold) release(ctx context.Context, why string, remove func() error) error {
	var err error
	r.once.Do(func() { err = r.releaseOnce(ctx, why, remove) })
	return err
}

func (r *runHold) releaseOnce(ctx context.Context, why string, remove func() error) (err error) {
	p := r.p
	r.releaseDisruptive() // its Stop removed that first, while still in its section
	if remove == nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.busy--
		r.endLocked()
		return nil
	}
	stop := context.AfterFunc(ctx, func() { p.mu.Lock(); p.cond.Broadcast(); p.mu.Unlock() })
	defer stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.busy--
	p.removers++
	p.cond.Broadcast()
	defer func() { p.removers--; r.endLocked() }()
	// This process's other runs first: each ends or waits to remove too (then they take turns).
	for (p.holds > p.removers || p.removing || p.alone) && ctx.Err() == nil {
		p.cond.Wait()
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("wait until no other run uses the shared cluster (%s): %w", why, err)
	}
	p.removing = true
	defer func() { p.removing = false }()
	// Then the other processes: leave the sections (their alone sections must not wait for this run),
	// and wait to be the last run alive.
	if p.sectionsHeld != 0 {
		_ = syscall.Flock(int(p.sections.Fd()), syscall.LOCK_UN)
		p.sectionsHeld = 0
	}
	if err := p.take(ctx, r.log, p.members, &p.membersHeld, syscall.LOCK_EX, "other runs use the shared cluster; waiting for them to end ("+why+")"); err != nil {
		return fmt.Errorf("wait until no other run uses the shared cluster (%s): %w", why, err)
	}
	r.log.Info("is the last run on the shared cluster", "for", why)
	return remove()
}

// endLocked counts the run out; the process's last run closes its locks. p.mu held.
func (r *runHold) endLocked() {
	p := r.p
	p.holds--
	switch {
	case p.holds == 0:
		p.drop()
	case p.removers == 0 && !p.alone: // the runs left are in or back to sections
		_ = p.take(context.Background(), r.log, p.members, &p.membersHeld, syscall.LOCK_SH, "")
		_ = p.take(context.Background(), r.log, p.sections, &p.sectionsHeld, syscall.LOCK_SH, "")
	}
	p.cond.Broadcast()
}

func membersPath(sections string) string {
	return strings.TrimSuffix(sections, ".lock") + ".members.lock"
}
