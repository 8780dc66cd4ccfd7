package applier

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// Applier applies payloads. One Applier may run many passes (Run calls are serialized); its delete
// progress is loaded from the StateStore on the first pass and saved on every change.
type Applier struct {
	c      client.Client
	mapper meta.RESTMapper
	opts   Options
	state  *tracker
	// coWaits: when each payload ClusterOperator's wait began (degraded grace).
	coWaits coWaitStarts

	runMu sync.Mutex

	statusMu sync.Mutex
	related  []configv1.ObjectReference // of the last completed pass
}

// New returns an Applier using c for every API call and mapper (nil: c.RESTMapper()) to resolve
// kinds. c needs no scheme beyond client-go's: objects are handled as unstructured.
func New(c client.Client, mapper meta.RESTMapper, opts Options) *Applier {
	opts = opts.withDefaults()
	if mapper == nil {
		mapper = c.RESTMapper()
	}
	store := opts.StateStore
	if store == nil {
		if opts.Namespace != "" {
			store = &ConfigMapStore{Client: c, Namespace: opts.Namespace, Name: opts.StateConfigMapName, FieldManager: opts.FieldManager}
		} else {
			store = &MemoryStore{}
		}
	}
	return &Applier{c: c, mapper: mapper, opts: opts, state: &tracker{store: store}}
}

// Options returns the effective options.
func (a *Applier) Options() Options { return a.opts }

// runState is one pass.
type runState struct {
	mode    Mode
	version string
	mu      sync.Mutex
	tasks   map[*payload.Manifest]*taskRecord
	msgs    []Message
	waiting map[string]bool // cluster operators being waited on
	related []configv1.ObjectReference
	// statusWarned: a status write failure was already reported in this pass.
	statusWarned bool
}

type taskRecord struct {
	resource string
	outcome  Outcome
	err      error
	msgs     []Message
}

func (a *Applier) message(run *runState, m *payload.Manifest, sev Severity, text string) {
	msg := Message{Severity: sev, Text: text}
	if m != nil {
		msg.Task = m.Ref()
	}
	if sev == SeverityWarning {
		a.opts.Logger.Info("WARNING: "+text, "task", msg.Task)
	} else {
		a.opts.Logger.Info(text, "task", msg.Task)
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	run.msgs = append(run.msgs, msg)
	if m != nil {
		if rec := run.tasks[m]; rec != nil {
			rec.msgs = append(rec.msgs, msg)
		}
	}
}

func (run *runState) setOutcome(m *payload.Manifest, o Outcome) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.tasks[m].outcome = o
}

func (run *runState) setResource(m *payload.Manifest, r string) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.tasks[m].resource = r
}

// ErrSuperseded is the cause to cancel a pass's context with when a newer payload replaced the one it
// applies (Main does): Run then ends without reporting the pass in the ClusterOperator, and returns it.
// The CVO does the same (pkg/cvo/sync_worker.go, SyncWorker.Update cancels the current sync loop when
// it loads new work): a pass waiting on a ClusterOperator of the old release would otherwise hold the
// new one back for up to --cluster-operator-timeout.
var ErrSuperseded = errors.New("a newer payload superseded the pass")

// Run applies p once in the given mode and returns every task's outcome. The error is non-nil when
// a task failed (a *PassError), when a minor/major update is blocked (*UpgradeBlockedError), when
// the state cannot be loaded, or when ctx was cancelled with ErrSuperseded. Failed tasks are retried
// by the next Run.
func (a *Applier) Run(ctx context.Context, p *payload.Payload, mode Mode) (Result, error) {
	a.runMu.Lock()
	defer a.runMu.Unlock()
	if _, err := ParseMode(string(mode)); err != nil {
		return Result{Mode: mode}, err
	}
	res := Result{Mode: mode, Version: p.Version}
	if err := a.state.load(ctx); err != nil {
		res.Err = err
		return res, err
	}
	run := &runState{mode: mode, version: p.Version, tasks: map[*payload.Manifest]*taskRecord{}, waiting: map[string]bool{}}
	for _, m := range p.Manifests {
		run.tasks[m] = &taskRecord{}
	}
	prev, _ := a.state.version()
	res.PreviousVersion = prev
	res.UpdateKind, _ = payload.ClassifyUpdate(prev, p.Version) // "" when a version does not parse

	// Deletions no longer in this payload are still checked, so Upgradeable can clear.
	a.refreshOrphanDeletes(ctx, run, p)

	if mode == ModeUpdate {
		if !a.opts.Force {
			if berr := a.upgradeBlocked(ctx, run, prev, a.state.gateFrom(), p.Version, res.UpdateKind); berr != nil {
				a.message(run, nil, SeverityWarning, berr.Error())
				res.Err = berr
				a.writeStatus(ctx, statusInput{run: run, phase: phaseBlocked, err: berr})
				a.finishResult(&res, run, p)
				return res, berr
			}
		}
		// Before any request of the pass: once started, an update is not refused by its own deletes.
		if err := a.state.startUpdate(ctx, p.Version); err != nil {
			a.message(run, nil, SeverityWarning, fmt.Sprintf("Cannot persist applier state: %v", err))
		}
	}

	a.writeStatus(ctx, statusInput{run: run, phase: phaseRunning})
	a.precreateClusterOperators(ctx, run, p)

	graph := payload.BuildGraph(p.Manifests)
	runs := graph.Run(ctx, a.opts.MaxParallelism, func(ctx context.Context, m *payload.Manifest) error {
		return a.runTask(ctx, run, m)
	})

	var perr PassError
	perr.Version = p.Version
	for _, m := range p.Manifests {
		tr := runs[m]
		rec := run.tasks[m]
		rec.err = tr.Err
		switch {
		case !tr.Ran:
			rec.outcome = OutcomeSkipped
		case tr.Err != nil:
			rec.outcome = OutcomeFailed
			perr.Errors = append(perr.Errors, &TaskError{Ref: m.Ref(), Err: tr.Err})
		}
	}
	if errors.Is(context.Cause(ctx), ErrSuperseded) { // the next pass reports; this one's errors are the cancel's
		res.Err = ErrSuperseded
		a.finishResult(&res, run, p)
		return res, ErrSuperseded
	}
	if ctx.Err() != nil && len(perr.Errors) == 0 {
		perr.Errors = append(perr.Errors, &TaskError{Ref: "pass", Err: ctx.Err()})
	}
	if len(perr.Errors) == 0 {
		res.Completed = true
		if err := a.state.setVersion(ctx, p.Version, p.Hash); err != nil {
			a.message(run, nil, SeverityWarning, fmt.Sprintf("Cannot persist applier state: %v", err))
		}
		a.statusMu.Lock()
		a.related = append([]configv1.ObjectReference(nil), run.related...)
		a.statusMu.Unlock()
	} else {
		res.Err = &perr
	}
	a.writeStatus(context.WithoutCancel(ctx), statusInput{run: run, phase: phaseDone, err: res.Err})
	a.finishResult(&res, run, p)
	return res, res.Err
}

func (a *Applier) finishResult(res *Result, run *runState, p *payload.Payload) {
	run.mu.Lock()
	defer run.mu.Unlock()
	for _, m := range p.Manifests {
		rec := run.tasks[m]
		tr := TaskResult{File: m.Filename, Index: m.Index, Resource: rec.resource, Outcome: rec.outcome, Err: rec.err, Messages: rec.msgs}
		if tr.Outcome == "" {
			tr.Outcome = OutcomeSkipped
		}
		res.Tasks = append(res.Tasks, tr)
	}
	res.Messages = append([]Message(nil), run.msgs...)
	res.DeletesInProgress = a.state.inProgressNames()
	res.Upgradeable = len(res.DeletesInProgress) == 0
	if !res.Upgradeable {
		res.UpgradeableMessage = payload.UpgradeableMessage(res.DeletesInProgress)
	}
}

// DeletesInProgress returns the unverified deletions known to the applier (sorted; loads the state
// if no pass ran yet).
func (a *Applier) DeletesInProgress(ctx context.Context) ([]string, error) {
	if err := a.state.load(ctx); err != nil {
		return nil, err
	}
	return a.state.inProgressNames(), nil
}

// State returns a copy of the persisted state (loads it if no pass ran yet).
func (a *Applier) State(ctx context.Context) (State, error) {
	if err := a.state.load(ctx); err != nil {
		return State{}, err
	}
	return a.state.snapshot(), nil
}

// CanUpgradeTo reports whether Run would start an update to version, by the same rule
// (payload.CanUpgrade): while deletions are in progress, a minor or major step forward from the
// update under way (else from the current version), or a version that is not SemVer, may not, and
// the message is then the refusal's; with none in progress any version may. It reads the recorded
// deletions; Run checks them on the cluster first, so it may find one completed since. The error is
// only the state's.
func (a *Applier) CanUpgradeTo(ctx context.Context, version string) (bool, string, error) {
	if err := a.state.load(ctx); err != nil {
		return false, "", err
	}
	ok, msg := payload.CanUpgrade(a.state.gateFrom(), version, a.state.inProgressNames())
	return ok, msg, nil
}

// CurrentVersion is the last completely applied payload version.
func (a *Applier) CurrentVersion(ctx context.Context) (string, error) {
	if err := a.state.load(ctx); err != nil {
		return "", err
	}
	v, _ := a.state.version()
	return v, nil
}
