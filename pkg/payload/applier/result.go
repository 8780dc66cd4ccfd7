package applier

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
)

// Outcome is what happened to one manifest in a pass.
type Outcome string

const (
	// OutcomeApplied: server-side applied.
	OutcomeApplied Outcome = "Applied"
	// OutcomeClusterOperatorReady: the ClusterOperator reports the manifest's versions.
	OutcomeClusterOperatorReady Outcome = "ClusterOperatorReady"
	// OutcomeDeleteRequested: a Delete was issued in this pass.
	OutcomeDeleteRequested Outcome = "DeleteRequested"
	// OutcomeDeleteInProgress: the delete was requested earlier; the object is still there.
	OutcomeDeleteInProgress Outcome = "DeleteInProgress"
	// OutcomeDeleted: the object is gone (completed now, verified earlier, or never found).
	OutcomeDeleted Outcome = "Deleted"
	// OutcomeReappeared: the object exists again after its delete was verified (warning).
	OutcomeReappeared Outcome = "Reappeared"
	// OutcomeDeleteNotRequested: the object exists but deletes are only issued in ModeUpdate.
	OutcomeDeleteNotRequested Outcome = "DeleteNotRequested"
	// OutcomeFailed: the task failed (Err says why); it is retried on the next pass.
	OutcomeFailed Outcome = "Failed"
	// OutcomeSkipped: not run because a task it depends on failed (Err says which).
	OutcomeSkipped Outcome = "Skipped"
)

// Severity of a progress message.
type Severity string

const (
	SeverityInfo    Severity = "Info"
	SeverityWarning Severity = "Warning"
)

// Message is one progress message.
type Message struct {
	Severity Severity
	Text     string
	// Task is the manifest reference ("<file>[<index>]"), empty for pass-level messages.
	Task string
}

func (m Message) String() string { return string(m.Severity) + ": " + m.Text }

// TaskResult is the outcome of one manifest.
type TaskResult struct {
	File  string
	Index int
	// Resource is the object as the CVO names it (`deployment "ns/name"`), empty if unresolved.
	Resource string
	Outcome  Outcome
	// Err is the task's error for OutcomeFailed (e.g. exactly `invalid delete annotation
	// "release.openshift.io/delete" value: "True"`) or why it was skipped for OutcomeSkipped.
	Err      error
	Messages []Message
}

// Ref is "<file>[<index>]".
func (t TaskResult) Ref() string { return fmt.Sprintf("%s[%d]", t.File, t.Index) }

// Result is the outcome of one pass.
type Result struct {
	Mode    Mode
	Version string
	// PreviousVersion is the last completely applied version before this pass ("" if none).
	PreviousVersion string
	// UpdateKind classifies PreviousVersion -> Version.
	UpdateKind payload.UpdateKind
	// Completed is true when every task succeeded; Version is then the applier's current version.
	Completed bool
	// Tasks in payload order.
	Tasks []TaskResult
	// Messages in the order they were produced.
	Messages []Message
	// DeletesInProgress are the unverified deletions after the pass (sorted Resource strings).
	DeletesInProgress []string
	// Upgradeable is false while deletions are in progress; UpgradeableMessage then says which.
	Upgradeable        bool
	UpgradeableMessage string
	// Err is the pass's error (also returned by Run).
	Err error
}

// Task returns the result of the first manifest of file (any index), or nil.
func (r Result) Task(file string) *TaskResult {
	for i := range r.Tasks {
		if r.Tasks[i].File == file {
			return &r.Tasks[i]
		}
	}
	return nil
}

// TaskAt returns the result of file's document index, or nil.
func (r Result) TaskAt(file string, index int) *TaskResult {
	for i := range r.Tasks {
		if r.Tasks[i].File == file && r.Tasks[i].Index == index {
			return &r.Tasks[i]
		}
	}
	return nil
}

// Texts returns the message texts in order.
func (r Result) Texts() []string {
	out := make([]string, 0, len(r.Messages))
	for _, m := range r.Messages {
		out = append(out, m.Text)
	}
	return out
}

// Warnings returns the texts of warning messages.
func (r Result) Warnings() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Severity == SeverityWarning {
			out = append(out, m.Text)
		}
	}
	return out
}

// Failed returns the failed tasks.
func (r Result) Failed() []TaskResult {
	var out []TaskResult
	for _, t := range r.Tasks {
		if t.Outcome == OutcomeFailed {
			out = append(out, t)
		}
	}
	return out
}

// TaskError is a failed task's error with its manifest reference.
type TaskError struct {
	Ref string
	Err error
}

func (e *TaskError) Error() string { return e.Ref + ": " + e.Err.Error() }
func (e *TaskError) Unwrap() error { return e.Err }

// PassError aggregates the failed tasks of a pass.
type PassError struct {
	Version string
	Errors  []*TaskError
}

func (e *PassError) Error() string {
	if len(e.Errors) == 1 {
		return fmt.Sprintf("Unable to apply %s: %v", e.Version, e.Errors[0])
	}
	msgs := make([]string, 0, len(e.Errors))
	for _, te := range e.Errors {
		msgs = append(msgs, te.Error())
	}
	sort.Strings(msgs)
	return fmt.Sprintf("Unable to apply %s: multiple errors are preventing progress:\n* %s", e.Version, strings.Join(msgs, "\n* "))
}

func (e *PassError) Unwrap() []error {
	out := make([]error, 0, len(e.Errors))
	for _, te := range e.Errors {
		out = append(out, te)
	}
	return out
}

// UpgradeBlockedError is returned when a minor/major update is refused because deletions of the
// current version are still in progress (Upgradeable=False), unless Options.Force.
type UpgradeBlockedError struct {
	// Current is the version the target was compared with: the update under way (State.Target),
	// else the last completed version.
	Current, Target string
	Kind            payload.UpdateKind
	Message         string
}

func (e *UpgradeBlockedError) Error() string {
	// The CVO's precondition and its words (pkg/payload/precondition/clusterversion/upgradeable.go
	// Name, precondition.go Summarize).
	return fmt.Sprintf("Precondition %q failed because of %q: %s", "ClusterVersionUpgradeable",
		payload.ReasonResourceDeletionInProgress, e.Message)
}

// IsUpgradeBlocked reports whether err is an UpgradeBlockedError.
func IsUpgradeBlocked(err error) bool {
	var ub *UpgradeBlockedError
	return errors.As(err, &ub)
}
