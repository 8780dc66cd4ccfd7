package applier

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// An object re-created under a marked name is another object: the delete records know theirs by UID.

var unitKey = client.ObjectKey{Namespace: "app", Name: "x"}

func markedX(version string) *pt.Builder {
	return pt.New(version).File(unitFile, pt.Delete(pt.ConfigMap("app", "x", nil)))
}

func recreateX(t *testing.T, c client.Client) types.UID {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "x"}}
	if err := c.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	return cm.UID
}

func recordOfX(t *testing.T, a *Applier) DeleteRecord {
	t.Helper()
	s, err := a.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range s.Deletes {
		if d.Resource.Name == "x" {
			return d
		}
	}
	t.Fatalf("no delete record of app/x in %+v", s.Deletes)
	return DeleteRecord{}
}

// Before UIDs were kept, an object re-created after its delete was requested held the name's record
// pending for ever: every later minor update was refused, across restarts, and the new object never
// deleted.
func TestARecreatedObjectCompletesThePendingDeleteOfTheOldOne(t *testing.T) {
	ctx := context.Background()
	c := pt.FakeClient()
	a := New(c, nil, unitOptions)
	unitPass(t, a, pt.New("1.0.0").File(unitFile, pt.WithFinalizers(pt.ConfigMap("app", "x", nil), unitHold)), ModeInstall)
	if got := unitPass(t, a, markedX("1.1.0"), ModeUpdate).Task(unitFile).Outcome; got != OutcomeDeleteRequested {
		t.Fatalf("outcome %s, want %s", got, OutcomeDeleteRequested)
	}
	var old corev1.ConfigMap
	if err := c.Get(ctx, unitKey, &old); err != nil {
		t.Fatal(err)
	}
	if rec := recordOfX(t, a); rec.UID != old.UID {
		t.Fatalf("the record names UID %q, want the deleted object's %q", rec.UID, old.UID)
	}
	old.Finalizers = nil // released: it goes
	if err := c.Update(ctx, &old); err != nil {
		t.Fatal(err)
	}
	fresh := recreateX(t, c)

	a = New(c, nil, unitOptions) // a restart: the record comes back from the state ConfigMap
	res := unitPass(t, a, markedX("1.1.0"), ModeReconcile)
	r := payload.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "app", Name: "x"}
	if got := res.Task(unitFile).Outcome; got != OutcomeReappeared || !res.Upgradeable || res.Texts()[0] != payload.MsgDeleteCompleted(r) {
		t.Fatalf("reconcile: outcome %s, Upgradeable %v, messages %q; want the old delete completed and the new object reported back", got, res.Upgradeable, res.Texts())
	}
	if res := unitPass(t, a, markedX("1.2.0"), ModeUpdate); res.Err != nil || res.Task(unitFile).Outcome != OutcomeDeleteRequested {
		t.Fatalf("the next minor update: %v, outcome %s; want it to start and delete the new object", res.Err, res.Task(unitFile).Outcome)
	}
	if err := c.Get(ctx, unitKey, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the re-created object after the update: %v, want it deleted", err)
	}
	if rec := recordOfX(t, a); rec.UID != fresh {
		t.Fatalf("the record names UID %q, want the re-created object's %q", rec.UID, fresh)
	}
}

// The Delete names the UID the pass read. Here the first Delete goes through, the owner re-creates
// the object and the answer is lost (a 500): the retry by name alone deleted the new object unread.
// Now the retry meets the precondition, the object is read again, and only then deleted.
func TestADeleteNeverRemovesAnObjectThePassDidNotRead(t *testing.T) {
	read := map[types.UID]bool{}
	var deletes []types.UID
	var recreated types.UID
	c := pt.FakeClient(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			if err == nil {
				read[obj.GetUID()] = true
			}
			return err
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			do := &client.DeleteOptions{}
			do.ApplyOptions(opts)
			if do.Preconditions == nil || do.Preconditions.UID == nil {
				t.Errorf("a Delete of %s without a UID precondition", obj.GetName())
				return c.Delete(ctx, obj, opts...)
			}
			uid := *do.Preconditions.UID
			if !read[uid] {
				t.Errorf("a Delete preconditioned on UID %s, which the applier never read", uid)
			}
			if err := c.Delete(ctx, obj, opts...); err != nil {
				return err
			}
			deletes = append(deletes, uid)
			if recreated == "" {
				recreated = recreateX(t, c)
				return apierrors.NewInternalError(errors.New("injected: the answer is lost"))
			}
			return nil
		},
	})
	a := New(c, nil, unitOptions)
	unitPass(t, a, pt.New("1.0.0").File(unitFile, pt.ConfigMap("app", "x", nil)), ModeInstall)
	res := unitPass(t, a, markedX("1.0.1"), ModeUpdate)
	if res.Err != nil || res.Task(unitFile).Outcome != OutcomeDeleteRequested {
		t.Fatalf("got %v, outcome %s", res.Err, res.Task(unitFile).Outcome)
	}
	if len(deletes) != 2 || deletes[1] != recreated {
		t.Fatalf("deletes that went through: %q, want the first object's, then the re-created %q once read", deletes, recreated)
	}
	if rec := recordOfX(t, a); rec.UID != recreated {
		t.Fatalf("the record names UID %q, want the object the Delete was issued for, %q", rec.UID, recreated)
	}
}

// An object found absent is recorded verified; one created later under the still-marked manifest is
// reported back on every pass but deleted by the next update (as the CVO, restarted by every update,
// deletes it untracked), never by a reconcile.
func TestAnUpdateDeletesAnObjectBackAfterItsDeleteWasVerified(t *testing.T) {
	ctx := context.Background()
	c := pt.FakeClient()
	a := New(c, nil, unitOptions)
	if got := unitPass(t, a, markedX("1.0.0"), ModeInstall).Task(unitFile).Outcome; got != OutcomeDeleted {
		t.Fatalf("install: %s, want %s (not found)", got, OutcomeDeleted)
	}
	recreateX(t, c)
	if got := unitPass(t, a, markedX("1.0.0"), ModeReconcile).Task(unitFile).Outcome; got != OutcomeReappeared {
		t.Fatalf("reconcile: %s, want %s", got, OutcomeReappeared)
	}
	if err := c.Get(ctx, unitKey, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("a reconcile deleted it: %v", err)
	}
	if got := unitPass(t, a, markedX("1.1.0"), ModeUpdate).Task(unitFile).Outcome; got != OutcomeDeleteRequested {
		t.Fatalf("update: %s, want %s", got, OutcomeDeleteRequested)
	}
	if err := c.Get(ctx, unitKey, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the update: %v, want it deleted", err)
	}
}

// A pending record written before UIDs were kept goes by the creation time: an object created after
// the Delete was requested is another one; one created before is the one being deleted.
func TestARecordWithoutAUIDGoesByTheCreationTime(t *testing.T) {
	requested := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	r := payload.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "app", Name: "x"}
	for _, c := range []struct {
		created time.Time
		want    Outcome
	}{
		{requested.Add(time.Hour), OutcomeDeleteRequested}, // re-created: the old delete is complete, this one is deleted
		{requested.Add(-time.Hour), OutcomeDeleteInProgress},
	} {
		cl := pt.FakeClient()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "x", CreationTimestamp: metav1.NewTime(c.created)}}
		if err := cl.Create(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
		store := &MemoryStore{}
		if err := store.Save(context.Background(), State{Version: "1.1.0", Deletes: []DeleteRecord{{Resource: r, Requested: &requested}}}); err != nil {
			t.Fatal(err)
		}
		a := New(cl, nil, Options{Namespace: "applier", DisableStatus: true, TaskRetryTimeout: time.Second, StateStore: store})
		if got := unitPass(t, a, markedX("1.1.1"), ModeUpdate).Task(unitFile).Outcome; got != c.want {
			t.Errorf("object created %s, delete requested %s: outcome %s, want %s", c.created, requested, got, c.want)
		}
	}
}
