package applier

import (
	"context"
	"fmt"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
)

// endDeleteRecord forgets the delete record of an object whose manifest is applied again (not
// marked). The CVO keeps its records in memory only, so the restart every upgrade causes wipes
// them; ours are persisted, and a record outliving the re-applied object would keep Upgradeable
// False forever (pending) or stop a later re-marking from deleting again (verified).
func (a *Applier) endDeleteRecord(ctx context.Context, run *runState, m *payload.Manifest, r payload.Resource) error {
	rec, found, err := a.state.forget(ctx, r)
	if err != nil {
		return fmt.Errorf("%s is applied again but ending its delete record failed (state ConfigMap %s/%s): %w",
			r, a.opts.Namespace, a.opts.StateConfigMapName, err)
	}
	if !found {
		return nil
	}
	a.message(run, m, SeverityInfo, MsgDeleteRecordEnded(r, rec))
	return nil
}

// MsgDeleteRecordEnded (info) says which record ended: a pending delete no longer holds Upgradeable, a
// verified one no longer turns a later re-marking into a "reappeared" warning.
func MsgDeleteRecordEnded(r payload.Resource, rec DeleteRecord) string {
	if rec.InProgress() {
		return fmt.Sprintf("The manifest of %s is applied again: its delete in progress is no longer tracked.", r)
	}
	return fmt.Sprintf("The manifest of %s is applied again: its completed delete is forgotten, a later delete annotation deletes it again.", r)
}
