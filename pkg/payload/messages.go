package payload

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The CVO's delete-progress messages. X is Resource.String(); times are RFC 3339 (UTC).

// MsgDeleteRequested: a Delete was just issued.
func MsgDeleteRequested(r Resource) string { return fmt.Sprintf("Delete requested for %s.", r) }

// MsgDeleteExpectedBy: the object has a deletionTimestamp; its delete is expected by then.
func MsgDeleteExpectedBy(r Resource, t time.Time) string {
	return fmt.Sprintf("Delete of %s is expected by %s.", r, FormatTime(t))
}

// MsgDeleteAlreadyRequested: the delete was requested earlier and the object is still there.
func MsgDeleteAlreadyRequested(r Resource) string {
	return fmt.Sprintf("Delete of %s has already been requested.", r)
}

// MsgDeleteCompleted: the object is gone after a requested delete.
func MsgDeleteCompleted(r Resource) string { return fmt.Sprintf("Delete of %s completed.", r) }

// MsgReappeared (warning): the object exists again after its delete was verified at t.
func MsgReappeared(r Resource, t time.Time) string {
	return fmt.Sprintf("%s has reappeared after having been deleted at %s.", r, FormatTime(t))
}

// MsgNotFound (warning): the object was never seen by this applier and does not exist.
func MsgNotFound(r Resource) string {
	return fmt.Sprintf("%s not found. It either has already been removed or it has never been installed on this cluster.", r)
}

// FormatTime is the time format of the messages.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Upgradeable condition values while deletions are unverified.
const (
	ReasonResourceDeletionInProgress = "ResourceDeletionInProgress"
	ReasonAsExpected                 = "AsExpected"
)

// UpgradeableMessage is the Upgradeable=False message for the given unverified deletions
// (Resource.String() values); they are sorted and comma-joined.
func UpgradeableMessage(resources []string) string {
	sorted := append([]string(nil), resources...)
	sort.Strings(sorted)
	return "Cluster minor or major version upgrades are not allowed while resource deletions are in progress; resources=" +
		strings.Join(sorted, ",")
}

// CanUpgrade decides like the CVO's Upgradeable precondition whether an update from current to target
// may start while the given deletions are unverified, and gives the refusal's message (the one
// applier.Run's UpgradeBlockedError carries). With no deletion in progress there is no
// Upgradeable=False and every update may start: the precondition passes before it parses a version
// (pkg/payload/precondition/clusterversion/upgradeable.go Run), so a target that is not SemVer is
// refused only while deletions are in progress. Otherwise only a minor or major step forward, or a
// target that is not SemVer, is refused (UpgradeGate).
func CanUpgrade(current, target string, deletesInProgress []string) (bool, string) {
	if len(deletesInProgress) == 0 {
		return true, ""
	}
	gated, _, err := UpgradeGate(current, target)
	if !gated && err == nil {
		return true, ""
	}
	msg := UpgradeableMessage(deletesInProgress)
	if err != nil {
		msg = err.Error() + "; " + msg
	}
	return false, msg
}
