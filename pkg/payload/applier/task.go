package applier

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// target is a manifest resolved against the cluster.
type target struct {
	m        *payload.Manifest
	mapping  *meta.RESTMapping
	resource payload.Resource
}

// runTask runs one manifest: validate, resolve, then delete / wait for a ClusterOperator / apply.
func (a *Applier) runTask(ctx context.Context, run *runState, m *payload.Manifest) error {
	if m.Obj.GetName() == "" {
		return fmt.Errorf("invalid object in %s (%s): name cannot be empty", m.Ref(), m.Obj.GetKind())
	}
	deleteRequested, err := payload.ValidDeleteAnnotation(m.Obj.GetAnnotations())
	if err != nil {
		return err // neither applied nor deleted
	}
	gvk := m.GVK()
	res := payload.Resource{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: m.Obj.GetNamespace(), Name: m.Obj.GetName()}

	var mapping *meta.RESTMapping
	lookup := func() error {
		var err error
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		return err
	}
	if deleteRequested {
		// A kind that is not served any more (its CRD went first) has no objects left to delete.
		err := lookup() // not scoped to the if: the retry's result must reach the check below
		if meta.IsNoMatchError(err) {
			a.resetMapper()
			err = lookup()
		}
		if meta.IsNoMatchError(err) {
			run.setResource(m, res.String())
			return a.deleteGone(ctx, run, m, res)
		} else if err != nil {
			return err
		}
	} else if err := a.retry(ctx, transient, lookup); err != nil {
		return fmt.Errorf("cannot resolve %s: %w", gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		res.Namespace = ""
	} else if res.Namespace == "" {
		return fmt.Errorf("invalid object in %s: %s %q is namespaced but has no metadata.namespace", m.Ref(), gvk.Kind, res.Name)
	}
	run.setResource(m, res.String())
	t := target{m: m, mapping: mapping, resource: res}

	if deleteRequested {
		return a.deleteTask(ctx, run, t)
	}
	a.addRelated(run, t)
	if m.IsClusterOperator() {
		return a.clusterOperatorTask(ctx, run, t)
	}
	return a.applyTask(ctx, run, t)
}

// applyTask server-side applies the manifest (forced, field manager Options.FieldManager).
func (a *Applier) applyTask(ctx context.Context, run *runState, t target) error {
	err := a.retry(ctx, transient, func() error {
		obj := t.m.Obj.DeepCopy()
		obj.SetNamespace(t.resource.Namespace)
		return a.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
			client.FieldOwner(a.opts.FieldManager), client.ForceOwnership)
	})
	if err != nil {
		return fmt.Errorf("cannot apply %s: %w", t.resource, err)
	}
	if err := a.endDeleteRecord(ctx, run, t.m, t.resource); err != nil {
		return err
	}
	run.setOutcome(t.m, OutcomeApplied)
	return nil
}

func (a *Applier) addRelated(run *runState, t target) {
	ref := configv1.ObjectReference{Group: t.mapping.Resource.Group, Resource: t.mapping.Resource.Resource,
		Namespace: t.resource.Namespace, Name: t.resource.Name}
	run.mu.Lock()
	defer run.mu.Unlock()
	for _, r := range run.related {
		if r == ref {
			return
		}
	}
	run.related = append(run.related, ref)
}
