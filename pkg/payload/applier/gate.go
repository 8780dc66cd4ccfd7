package applier

import (
	"context"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
)

// upgradeBlocked is the Upgradeable precondition of an update to target: it compares target with
// from (the update under way, else the last completed version: tracker.gateFrom), checks the
// unverified deletions only when payload.UpgradeGate gates the step (or cannot judge the target),
// and refuses it while some remain. A current version that is not SemVer only warns, and so does a
// z-stream retarget of a minor or major update under way while deletions remain.
func (a *Applier) upgradeBlocked(ctx context.Context, run *runState, completed, from, target string, kind payload.UpdateKind) *UpgradeBlockedError {
	gated, warning, err := payload.UpgradeGate(from, target)
	if warning != "" {
		// Even with no deletion in progress: the CVO's deletion risk is itself a risk when the current
		// version does not parse (pkg/risk/deletion/deletion.go Risks), so Upgradeable is False and
		// the precondition warns.
		a.message(run, nil, SeverityWarning, warning)
	}
	refuses := gated || err != nil // with deletions in progress; otherwise it may only warn
	retarget := ""
	if !refuses && from != completed {
		retarget = payload.RetargetWarning(completed, from, target)
	}
	if !refuses && retarget == "" {
		return nil
	}
	pending := a.verifyInProgress(ctx, run)
	if len(pending) == 0 {
		return nil
	}
	if !refuses {
		a.message(run, nil, SeverityWarning, retarget+" "+payload.UpgradeableMessage(pending))
		return nil
	}
	// The refusal and its words are payload.CanUpgrade's, which CanUpgradeTo answers with.
	if ok, msg := payload.CanUpgrade(from, target, pending); !ok {
		return &UpgradeBlockedError{Current: from, Target: target, Kind: kind, Message: msg}
	}
	return nil
}
