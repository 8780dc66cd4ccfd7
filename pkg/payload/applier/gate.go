package applier

import (
	"context"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
)

// upgradeBlocked is the Upgradeable precondition of an update from current to target: it checks
// the unverified deletions only when payload.UpgradeGate gates the update (or cannot judge the
// target), and refuses it while some remain. A current version that is not SemVer only warns.
func (a *Applier) upgradeBlocked(ctx context.Context, run *runState, current, target string, kind payload.UpdateKind) *UpgradeBlockedError {
	gated, warning, err := payload.UpgradeGate(current, target)
	if warning != "" {
		a.message(run, nil, SeverityWarning, warning)
	}
	if !gated && err == nil {
		return nil
	}
	pending := a.verifyInProgress(ctx, run)
	if len(pending) == 0 {
		return nil
	}
	msg := payload.UpgradeableMessage(pending)
	if err != nil {
		msg = err.Error() + "; " + msg
	}
	return &UpgradeBlockedError{Current: current, Target: target, Kind: kind, Message: msg}
}
