package deletestate

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

const holdFinalizer = "cleanup-e2e.io/hold"

// driver runs steps against the real applier on an in-memory cluster, its state persisted in a
// ConfigMap like in production, and the model side by side.
type driver struct {
	ctx   context.Context
	c     client.Client
	a     *applier.Applier
	model model
}

func newDriver(ctx context.Context) *driver {
	d := &driver{ctx: ctx, c: pt.FakeClient()}
	d.restart()
	return d
}

func (d *driver) restart() {
	d.a = applier.New(d.c, nil, applier.Options{Namespace: "applier", DisableStatus: true, TaskRetryTimeout: time.Second})
}

// object i as shipped (unmarked): o0..o2 ConfigMaps, o3 a ClusterRole.
func object(i int) *unstructured.Unstructured {
	if i == numObjects-1 {
		return pt.Object("rbac.authorization.k8s.io/v1", "ClusterRole", "", fmt.Sprintf("deletestate-o%d", i))
	}
	return pt.ConfigMap("app", fmt.Sprintf("o%d", i), map[string]string{"k": "v"})
}

func objectFile(i int) string { return fmt.Sprintf("0000_10_o%d_00_object.yaml", i) }

func build(p payloadSpec) *pt.Builder {
	b := pt.New(p.version)
	for i, m := range p.manifests {
		switch m {
		case apply:
			o := object(i)
			if heldByManifest(i) {
				o = pt.WithFinalizers(o, holdFinalizer)
			}
			b.File(objectFile(i), o)
		case mark:
			b.File(objectFile(i), pt.Delete(object(i)))
		case invalid:
			b.File(objectFile(i), pt.DeleteValue(object(i), p.invalidValue))
		}
	}
	return b
}

// do runs one step on both sides and returns the first difference.
func (d *driver) do(s step) error {
	switch s.kind {
	case passStep:
		if err := d.pass(s); err != nil {
			return err
		}
	case restartStep:
		d.restart()
	case releaseStep:
		d.model.release(s.object)
		if err := d.release(s.object); err != nil {
			return err
		}
	case externalDeleteStep:
		d.model.externalDelete(s.object)
		if err := d.externalDelete(s.object); err != nil {
			return err
		}
	case externalCreateStep:
		d.model.externalCreate(s.object)
		if err := d.c.Create(d.ctx, object(s.object)); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return d.compareState()
}

func (d *driver) pass(s step) error {
	p, err := build(s.payload).Load()
	if err != nil {
		return err
	}
	exp := d.model.pass(s.payload, s.mode)
	res, runErr := d.a.Run(d.ctx, p, s.mode)
	if got := applier.IsUpgradeBlocked(runErr); got != exp.blocked {
		return fmt.Errorf("upgrade blocked: applier %v, model %v (error: %v)", got, exp.blocked, runErr)
	}
	if exp.blocked {
		return nil
	}
	if res.Completed != exp.completed {
		return fmt.Errorf("pass completed: applier %v, model %v (error: %v)", res.Completed, exp.completed, runErr)
	}
	for i := range exp.outcomes {
		var got applier.Outcome
		if t := res.Task(objectFile(i)); t != nil {
			got = t.Outcome
		}
		if got != exp.outcomes[i] {
			return fmt.Errorf("o%d outcome: applier %q, model %q (messages: %q)", i, got, exp.outcomes[i], res.Texts())
		}
	}
	if res.Upgradeable == d.model.anyPending() {
		return fmt.Errorf("Upgradeable: applier %v, model %v (deletes in progress: %q)", res.Upgradeable, !d.model.anyPending(), res.DeletesInProgress)
	}
	return nil
}

// compareState compares the persisted records, the current version and the cluster.
func (d *driver) compareState() error {
	st, err := d.a.State(d.ctx)
	if err != nil {
		return err
	}
	var got [numObjects]record
	var uids [numObjects]types.UID
	for _, rec := range st.Deletes {
		for i := range numObjects {
			if rec.Resource.Key() == resourceOf(i).Key() {
				got[i], uids[i] = verified, rec.UID
				if rec.InProgress() {
					got[i] = pending
				}
			}
		}
	}
	for i := range numObjects {
		if got[i] != d.model.records[i] {
			return fmt.Errorf("o%d delete record: applier %s, model %s", i, got[i], d.model.records[i])
		}
		l, err := d.live(i)
		if err != nil {
			return err
		}
		if l != d.model.objects[i] {
			return fmt.Errorf("o%d in the cluster: %s, model %s", i, l, d.model.objects[i])
		}
		if got[i] != pending || l == absent {
			continue
		}
		o, err := d.get(i)
		if err != nil {
			return err
		}
		if same, want := o.GetUID() == uids[i], d.model.recFor[i] == d.model.uid[i]; same != want {
			return fmt.Errorf("o%d: the pending delete is for the live object (UID %s, record %s): applier %v, model %v", i, o.GetUID(), uids[i], same, want)
		}
	}
	if st.Version != d.model.version {
		return fmt.Errorf("current version: applier %q, model %q", st.Version, d.model.version)
	}
	if st.Target != d.model.target {
		return fmt.Errorf("update under way: applier %q, model %q", st.Target, d.model.target)
	}
	return nil
}

func (m *model) anyPending() bool {
	for _, r := range m.records {
		if r == pending {
			return true
		}
	}
	return false
}

func resourceOf(i int) payload.Resource {
	o := object(i)
	gvk := o.GroupVersionKind()
	return payload.Resource{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}
}

func (d *driver) get(i int) (*unstructured.Unstructured, error) {
	o := object(i)
	err := d.c.Get(d.ctx, client.ObjectKeyFromObject(o), o)
	return o, err
}

func (d *driver) live(i int) (live, error) {
	o, err := d.get(i)
	switch {
	case apierrors.IsNotFound(err):
		return absent, nil
	case err != nil:
		return absent, err
	case o.GetDeletionTimestamp() != nil:
		return terminating, nil
	}
	return present, nil
}

// release strips the finalizers of object i if it is terminating (the fake client then removes it).
func (d *driver) release(i int) error {
	o, err := d.get(i)
	if apierrors.IsNotFound(err) || (err == nil && o.GetDeletionTimestamp() == nil) {
		return nil
	}
	if err != nil {
		return err
	}
	o.SetFinalizers(nil)
	return d.c.Update(d.ctx, o)
}

func (d *driver) externalDelete(i int) error {
	o, err := d.get(i)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(o.GetFinalizers()) > 0 {
		o.SetFinalizers(nil)
		if err := d.c.Update(d.ctx, o); err != nil {
			return err
		}
	}
	if err := d.c.Delete(d.ctx, object(i)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
