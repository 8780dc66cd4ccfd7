package extensioncleanup_test

import (
	"context"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The tests add and remove their own finalizers while the operator, the controller and the API server
// change the same list. Each edit starts from the live list and is sent with the resourceVersion it
// was read at (a conflict reads again): a list read earlier may lack the operator's finalizer, and
// writing it back would drop it, or still hold one the operator has removed since, and writing it
// back adds a finalizer to an object being deleted, which the API server refuses.

// addFinalizer adds f to obj; false when obj is gone or being deleted (no finalizer may be added then).
func addFinalizer(ctx context.Context, t *testing.T, e *env, obj *unstructured.Unstructured, f string) bool {
	t.Helper()
	return editFinalizers(ctx, t, e, obj, func(live *unstructured.Unstructured) ([]string, bool) {
		if live.GetDeletionTimestamp() != nil {
			return nil, false
		}
		return append(without(live.GetFinalizers(), f), f), true
	})
}

// mustAddFinalizer is addFinalizer on an object that must be there and not being deleted.
func mustAddFinalizer(ctx context.Context, t *testing.T, e *env, obj *unstructured.Unstructured, f string) {
	t.Helper()
	if !addFinalizer(ctx, t, e, obj, f) {
		t.Fatalf("%s %s: cannot add finalizer %s: the object is gone or being deleted", obj.GetKind(), obj.GetName(), f)
	}
}

// removeFinalizer removes f from obj, if obj is still there and has it.
func removeFinalizer(ctx context.Context, t *testing.T, e *env, obj *unstructured.Unstructured, f string) {
	t.Helper()
	editFinalizers(ctx, t, e, obj, func(live *unstructured.Unstructured) ([]string, bool) {
		return without(live.GetFinalizers(), f), slices.Contains(live.GetFinalizers(), f)
	})
}

// editFinalizers sets obj's finalizers to what edit makes of the live object, unless edit says no
// (false); false also when obj is gone. obj's finalizers follow.
func editFinalizers(ctx context.Context, t *testing.T, e *env, obj *unstructured.Unstructured, edit func(*unstructured.Unstructured) ([]string, bool)) bool {
	t.Helper()
	for {
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s %s: finalizers not changed: %v", obj.GetKind(), obj.GetName(), err)
		}
		live := obj.DeepCopy()
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(obj), live); apierrors.IsNotFound(err) {
			return false
		} else if err != nil {
			t.Fatal(err)
		}
		fs, ok := edit(live)
		if !ok {
			return false
		}
		orig := live.DeepCopy()
		live.SetFinalizers(fs)
		err := e.c.Patch(ctx, live, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		switch {
		case err == nil:
			obj.SetFinalizers(fs)
			return true
		case apierrors.IsNotFound(err):
			return false
		case !apierrors.IsConflict(err):
			t.Fatal(err)
		}
	}
}

// An edit keeps what the live object has. Removing the test's finalizer through a copy read before the
// operator added its own keeps the operator's; through a copy read before the operator removed its own
// from an object being deleted, it adds nothing back, and the object goes. No finalizer is added to an
// object being deleted.
func TestFinalizerEditsStartFromTheLiveObject(t *testing.T) {
	ctx := context.Background()
	const op, foreign = "example.com/operator", "example.com/foreign"
	newObj := func(name string, fs ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetFinalizers(fs)
		return u
	}
	e := &env{c: fake.NewClientBuilder().WithObjects(newObj("added", op, foreign), newObj("removed", op, foreign)).Build()}

	removeFinalizer(ctx, t, e, newObj("added", foreign), foreign) // read before the operator's was added
	live := newObj("added")
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil || !slices.Equal(live.GetFinalizers(), []string{op}) {
		t.Errorf("after removing %s through an old copy: want finalizers [%s], got %v (error %v)", foreign, op, live.GetFinalizers(), err)
	}

	old := newObj("removed", op, foreign)
	if err := e.c.Delete(ctx, newObj("removed")); err != nil {
		t.Fatal(err)
	}
	if addFinalizer(ctx, t, e, old, "example.com/late") {
		t.Error("a finalizer was added to an object being deleted")
	}
	removeFinalizer(ctx, t, e, newObj("removed"), op) // the operator's, done; old still has it
	removeFinalizer(ctx, t, e, old, foreign)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(old), newObj("removed")); !apierrors.IsNotFound(err) {
		t.Errorf("the object being deleted, its last finalizer removed through an old copy: want it gone, got %v (finalizers now %v)", err, old.GetFinalizers())
	}
}
