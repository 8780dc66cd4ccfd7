package applier

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
)

// getLive reads the object; found is false on NotFound. A recorded version that is no longer served
// falls back to the kind's preferred version; a kind not served at all is a NoMatch error.
func (a *Applier) getLive(ctx context.Context, r payload.Resource) (*unstructured.Unstructured, bool, error) {
	gvk := schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
	if _, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); isNoMatch(err) {
		m, err := a.mapper.RESTMapping(gvk.GroupKind())
		if err != nil {
			return nil, false, err
		}
		gvk = m.GroupVersionKind
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	// A NotFound is the answer, also the bare 404 of a kind whose CRD just went (client-go marks it
	// an unexpected server response, which transient() would retry until TaskRetryTimeout).
	err := a.retry(ctx, func(err error) bool { return transient(err) && !isNoMatch(err) && !apierrors.IsNotFound(err) }, func() error {
		return a.c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, live)
	})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return live, true, nil
}

// deleteTask handles a manifest annotated release.openshift.io/delete: "true". Like the CVO it never
// waits for the object to go: ModeUpdate issues one Delete with the server's default propagation (the
// CVO sends empty DeleteOptions, lib/resourcedelete: a batch/v1 Job's default orphans its pods); every
// later pass does one Get and reports progress. Install and reconcile never issue a Delete.
func (a *Applier) deleteTask(ctx context.Context, run *runState, t target) error {
	live, found, err := a.getLive(ctx, t.resource)
	if rec, tracked := a.state.get(t.resource); err != nil && tracked {
		// Like the CVO, a failed look at a delete already tracked does not fail the task: its
		// progress is simply unknown until the next pass.
		a.message(run, t.m, SeverityWarning, fmt.Sprintf("Cannot check delete progress of %s: %v", t.resource, err))
		outcome := OutcomeDeleteInProgress
		if !rec.InProgress() {
			outcome = OutcomeDeleted
		}
		run.setOutcome(t.m, outcome)
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot get %s to delete: %w", t.resource, err)
	}
	if !found {
		return a.deleteGone(ctx, run, t.m, t.resource)
	}
	return a.deletePresent(ctx, run, t, live)
}

// deleteGone: the object does not exist (or its kind is not served).
func (a *Applier) deleteGone(ctx context.Context, run *runState, m *payload.Manifest, r payload.Resource) error {
	now := a.opts.Now()
	rec, tracked := a.state.get(r)
	switch {
	case tracked && !rec.InProgress():
		// Verified earlier; nothing to say.
	case tracked:
		rec.Verified = timePtr(now)
		if err := a.state.set(ctx, rec); err != nil {
			return err
		}
		a.message(run, m, SeverityInfo, payload.MsgDeleteCompleted(r))
	default:
		// Never seen by this applier: deleted in an earlier life, or never installed.
		rec = DeleteRecord{Resource: r, Requested: timePtr(now), Verified: timePtr(now)}
		if err := a.state.set(ctx, rec); err != nil {
			return err
		}
		a.message(run, m, SeverityWarning, payload.MsgNotFound(r))
	}
	run.setOutcome(m, OutcomeDeleted)
	return nil
}

// deletePresent: the object exists. Its Delete names the UID read here (a precondition), so the applier
// never deletes an object it has not read: one re-created under the same name since the read, or
// between two attempts of a retried Delete, answers Conflict and is read again first.
func (a *Applier) deletePresent(ctx context.Context, run *runState, t target, live *unstructured.Unstructured) error {
	r, m := t.resource, t.m
	rec, tracked := a.state.get(r)
	if tracked && rec.InProgress() && !rec.isFor(live) {
		// The object whose delete was requested is gone; this one was created since.
		rec.Verified = timePtr(a.opts.Now())
		if err := a.state.set(ctx, rec); err != nil {
			return err
		}
		a.message(run, m, SeverityInfo, payload.MsgDeleteCompleted(r))
	}
	if tracked && !rec.InProgress() {
		a.message(run, m, SeverityWarning, payload.MsgReappeared(r, *rec.Verified))
		if run.mode != ModeUpdate {
			run.setOutcome(m, OutcomeReappeared)
			return nil
		}
		// An update deletes it again: the payload still marks it, and the CVO, which every update
		// restarts, would hold no record of the earlier delete and request this one.
	} else if tracked {
		if dt := live.GetDeletionTimestamp(); dt != nil {
			rec.Expected = timePtr(dt.Time)
			if err := a.state.set(ctx, rec); err != nil {
				return err
			}
			a.message(run, m, SeverityInfo, payload.MsgDeleteExpectedBy(r, dt.Time))
		} else {
			a.message(run, m, SeverityInfo, payload.MsgDeleteAlreadyRequested(r))
		}
		run.setOutcome(m, OutcomeDeleteInProgress)
		return nil
	}
	if run.mode != ModeUpdate {
		a.message(run, m, SeverityInfo, fmt.Sprintf("%s exists; its delete is only requested when updating to a new payload.", r))
		run.setOutcome(m, OutcomeDeleteNotRequested)
		return nil
	}
	live, err := a.requestDelete(ctx, r, live)
	now := a.opts.Now()
	// Once the Delete went out, its record is written even if the pass is cancelled meanwhile (a newer
	// payload, the process stopping): otherwise the next pass would not know it requested it.
	recordCtx := context.WithoutCancel(ctx)
	if apierrors.IsNotFound(err) {
		rec = DeleteRecord{Resource: r, Requested: timePtr(now), Verified: timePtr(now)}
		if err := a.state.set(recordCtx, rec); err != nil {
			return err
		}
		a.message(run, m, SeverityInfo, payload.MsgDeleteRequested(r))
		a.message(run, m, SeverityInfo, payload.MsgDeleteCompleted(r))
		run.setOutcome(m, OutcomeDeleted)
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete request for %s failed: %w", r, err)
	}
	rec = DeleteRecord{Resource: r, Requested: timePtr(now), UID: live.GetUID()}
	if dt := live.GetDeletionTimestamp(); dt != nil {
		rec.Expected = timePtr(dt.Time)
	}
	if err := a.state.set(recordCtx, rec); err != nil {
		return fmt.Errorf("delete of %s requested but not persisted: %w", r, err)
	}
	a.message(run, m, SeverityInfo, payload.MsgDeleteRequested(r))
	run.setOutcome(m, OutcomeDeleteRequested)
	return nil
}

// rereads bounds how often one pass reads an object again because it was re-created while its
// delete was being requested.
const rereads = 3

// requestDelete deletes live, preconditioned on its UID, and returns the object the Delete was issued
// for. A Conflict (the UID no longer matches: the object was re-created) is not retried as such: the
// object is read again and that one is deleted, as a pass that read it would (the payload marks it).
// NotFound means it is gone.
func (a *Applier) requestDelete(ctx context.Context, r payload.Resource, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	for read := 1; ; read++ {
		uid := live.GetUID()
		err := a.retry(ctx, func(err error) bool { return transient(err) && !apierrors.IsConflict(err) }, func() error {
			return a.c.Delete(ctx, live, client.Preconditions{UID: &uid})
		})
		if !apierrors.IsConflict(err) || read == rereads {
			return live, err
		}
		fresh, found, gerr := a.getLive(ctx, r)
		if gerr != nil {
			return live, fmt.Errorf("%w; reading it again: %v", err, gerr)
		}
		if !found {
			return live, apierrors.NewNotFound(schema.GroupResource{Group: r.Group, Resource: r.Kind}, r.Name)
		}
		live = fresh
	}
}

// refreshOrphanDeletes checks unverified deletions whose manifests are not in p (the payload moved
// on), so they can complete and Upgradeable can clear.
func (a *Applier) refreshOrphanDeletes(ctx context.Context, run *runState, p *payload.Payload) {
	inPayload := map[string]bool{}
	for _, m := range p.Manifests {
		gvk := m.GVK()
		for _, ns := range []string{m.Obj.GetNamespace(), ""} {
			inPayload[payload.Resource{Group: gvk.Group, Kind: gvk.Kind, Namespace: ns, Name: m.Obj.GetName()}.Key()] = true
		}
	}
	for _, rec := range a.state.inProgress() {
		if inPayload[rec.Resource.Key()] {
			continue
		}
		a.checkDelete(ctx, run, rec)
	}
}

// verifyInProgress does a Get for every unverified deletion and returns those still present.
func (a *Applier) verifyInProgress(ctx context.Context, run *runState) []string {
	for _, rec := range a.state.inProgress() {
		a.checkDelete(ctx, run, rec)
	}
	return a.state.inProgressNames()
}

// checkDelete marks rec verified if its object is gone (or its kind is no longer served, or the object
// of that name is another one, created since).
func (a *Applier) checkDelete(ctx context.Context, run *runState, rec DeleteRecord) {
	live, found, err := a.getLive(ctx, rec.Resource)
	if err != nil && !isNoMatch(err) {
		a.message(run, nil, SeverityWarning, fmt.Sprintf("Cannot check delete progress of %s: %v", rec.Resource, err))
		return
	}
	if found && rec.isFor(live) {
		return
	}
	rec.Verified = timePtr(a.opts.Now())
	if err := a.state.set(ctx, rec); err != nil {
		a.message(run, nil, SeverityWarning, fmt.Sprintf("Cannot persist applier state: %v", err))
	}
	a.message(run, nil, SeverityInfo, payload.MsgDeleteCompleted(rec.Resource))
}
