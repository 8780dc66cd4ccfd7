package applier

import (
	"context"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// ClusterOperatorNotReadyError: a payload ClusterOperator did not become ready (available, not
// degraded, at the payload versions outside an install) within Options.ClusterOperatorTimeout.
type ClusterOperatorNotReadyError struct {
	Name string
	// Waiting is what was missing at the last look, e.g. "updating versions: operator from 1.0.0 to 2.0.0".
	Waiting string
	Timeout time.Duration
}

func (e *ClusterOperatorNotReadyError) Error() string {
	return fmt.Sprintf("cluster operator %s has not become ready within %s: %s; its operator must report it (or raise --cluster-operator-timeout)",
		e.Name, e.Timeout, e.Waiting)
}

// manifestVersions reads status.versions of a ClusterOperator manifest.
func manifestVersions(u *unstructured.Unstructured) []configv1.OperandVersion {
	items, _, _ := unstructured.NestedSlice(u.Object, "status", "versions")
	var out []configv1.OperandVersion
	for _, it := range items {
		mm, ok := it.(map[string]interface{})
		if !ok {
			continue
		}
		name, _ := mm["name"].(string)
		version, _ := mm["version"].(string)
		out = append(out, configv1.OperandVersion{Name: name, Version: version})
	}
	return out
}

// undoneVersions lists the expected versions the live object does not report, CVO-style.
func undoneVersions(expected, actual []configv1.OperandVersion) []string {
	var undone []string
	for _, exp := range expected {
		current := ""
		for _, act := range actual {
			if act.Name == exp.Name {
				current = act.Version
				break
			}
		}
		if current == exp.Version {
			continue
		}
		if current == "" {
			undone = append(undone, fmt.Sprintf("%s to %s", exp.Name, exp.Version))
		} else {
			undone = append(undone, fmt.Sprintf("%s from %s to %s", exp.Name, current, exp.Version))
		}
	}
	sort.Strings(undone)
	return undone
}

// newClusterOperator is the object pre-created for a manifest: metadata and empty spec, no status.
func newClusterOperator(m *unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{}}}
	u.SetGroupVersionKind(configv1.ClusterOperatorGVK)
	u.SetName(m.GetName())
	u.SetLabels(m.GetLabels())
	ann := map[string]string{}
	for k, v := range m.GetAnnotations() {
		if k != payload.DeleteAnnotation {
			ann[k] = v
		}
	}
	if len(ann) > 0 {
		u.SetAnnotations(ann)
	}
	return u
}

// ensureClusterOperator creates the ClusterOperator if it is missing; created reports whether it did.
func (a *Applier) ensureClusterOperator(ctx context.Context, m *unstructured.Unstructured) (bool, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(configv1.ClusterOperatorGVK)
	err := a.c.Get(ctx, client.ObjectKey{Name: m.GetName()}, live)
	if err == nil {
		return false, nil
	}
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	co := newClusterOperator(m)
	if err := a.c.Create(ctx, co); apierrors.IsAlreadyExists(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, a.fillRelatedObjects(ctx, co, m)
}

// fillRelatedObjects copies the manifest's status.relatedObjects into a ClusterOperator just
// created, as the CVO's pre-creation does, so must-gather finds them before the operator runs. A
// conflict means the operator already wrote its status: it wins.
func (a *Applier) fillRelatedObjects(ctx context.Context, created, m *unstructured.Unstructured) error {
	related, found, _ := unstructured.NestedSlice(m.Object, "status", "relatedObjects")
	if !found || len(related) == 0 {
		return nil
	}
	if err := unstructured.SetNestedSlice(created.Object, related, "status", "relatedObjects"); err != nil {
		return fmt.Errorf("cluster operator %s: manifest status.relatedObjects: %w", m.GetName(), err)
	}
	if err := a.c.Status().Update(ctx, created); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("cannot set status.relatedObjects of cluster operator %s: %w", m.GetName(), err)
	}
	return nil
}

// precreateClusterOperators creates the payload's ClusterOperators (without status) when missing, at
// the start of a pass, so their operators and must-gather find them early. Failures are reported,
// not fatal (the task itself retries).
func (a *Applier) precreateClusterOperators(ctx context.Context, run *runState, p *payload.Payload) {
	for _, m := range p.Manifests {
		if !m.IsClusterOperator() || m.Obj.GetName() == "" {
			continue
		}
		if del, err := payload.ValidDeleteAnnotation(m.Obj.GetAnnotations()); del || err != nil {
			continue
		}
		created, err := a.ensureClusterOperator(ctx, m.Obj)
		switch {
		case err != nil:
			a.message(run, m, SeverityInfo, fmt.Sprintf("Unable to precreate cluster operator %s: %v", m.Obj.GetName(), err))
		case created:
			a.message(run, m, SeverityInfo, fmt.Sprintf("Precreated cluster operator %s.", m.Obj.GetName()))
		}
	}
}

// clusterOperatorTask waits (bounded by Options.ClusterOperatorTimeout) until the live ClusterOperator
// is healthy as the CVO judges it (judgeClusterOperator); the manifest itself is not applied (its
// operator owns the status).
func (a *Applier) clusterOperatorTask(ctx context.Context, run *runState, t target) error {
	name := t.m.Obj.GetName()
	expected := manifestVersions(t.m.Obj)
	if len(expected) == 0 {
		return fmt.Errorf("cluster operator %s does not declare expected versions: its manifest %s needs status.versions (at least name: operator)", name, t.m.Ref())
	}
	if _, err := a.ensureClusterOperator(ctx, t.m.Obj); err != nil {
		return fmt.Errorf("cannot create cluster operator %s: %w", name, err)
	}
	if err := a.endDeleteRecord(ctx, run, t.m, t.resource); err != nil {
		return err
	}
	started := a.coWaits.start(name, a.opts.Now())
	var last coVerdict
	var lastErr error
	waiting := false
	defer func() {
		if waiting {
			a.setWaiting(ctx, run, name, false)
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, a.opts.ClusterOperatorTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(wctx, a.opts.PollInterval, true, func(context.Context) (bool, error) {
		var co configv1.ClusterOperator
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(configv1.ClusterOperatorGVK)
		// The Get uses the pass's context: cut by the wait's deadline, its error would hide the last look.
		if err := a.c.Get(ctx, client.ObjectKey{Name: name}, live); err != nil {
			// Keep polling through any error (it may be recreated, or the API may blip); the timeout bounds it.
			lastErr = err
			return false, nil
		}
		if err := fromUnstructured(live, &co); err != nil {
			return false, err
		}
		lastErr = nil
		v := judgeClusterOperator(expected, &co, run.mode, a.opts.Now().Sub(started), a.opts.ClusterOperatorDegradedGrace)
		if v.done || v.fail != nil {
			last = v
			return true, nil
		}
		if v.waiting != last.waiting {
			a.message(run, t.m, SeverityInfo, fmt.Sprintf("Waiting on cluster operator %s: %s.", name, v.waiting))
		}
		last = v
		if !waiting {
			waiting = true
			a.setWaiting(ctx, run, name, true)
		}
		return false, nil
	})
	switch {
	case err == nil && last.fail != nil:
		return last.fail
	case err == nil:
	case ctx.Err() != nil:
		return fmt.Errorf("waiting on cluster operator %s: %w", name, ctx.Err())
	case wctx.Err() != nil:
		nr := &ClusterOperatorNotReadyError{Name: name, Waiting: last.waiting, Timeout: a.opts.ClusterOperatorTimeout}
		if lastErr != nil {
			nr.Waiting = fmt.Sprintf("cannot get it: %v", lastErr)
		}
		return nr
	default:
		return fmt.Errorf("waiting on cluster operator %s: %w", name, err)
	}
	a.coWaits.end(name)
	if last.report != "" {
		a.message(run, t.m, SeverityWarning, last.report)
	}
	a.message(run, t.m, SeverityInfo, fmt.Sprintf("Cluster operator %s is ready.", name))
	run.setOutcome(t.m, OutcomeClusterOperatorReady)
	return nil
}

func (a *Applier) setWaiting(ctx context.Context, run *runState, name string, on bool) {
	run.mu.Lock()
	if on {
		run.waiting[name] = true
	} else {
		delete(run.waiting, name)
	}
	run.mu.Unlock()
	a.writeStatus(context.WithoutCancel(ctx), statusInput{run: run, phase: phaseRunning})
}
