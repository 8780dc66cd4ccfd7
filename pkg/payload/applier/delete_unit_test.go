package applier

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// Issue 13 item 5, deliberate choices pinned on an in-memory cluster with injected API answers.

const (
	unitFile = "0000_10_app_00_x.yaml"
	// unitHold is a finalizer nobody removes: a deleted object stays pending until the test removes it.
	unitHold = "cleanup-e2e.io/hold"
)

// unitOptions are the unit tests' applier options: no ClusterOperator status, short task retries.
var unitOptions = Options{Namespace: "applier", DisableStatus: true, TaskRetryTimeout: time.Second}

func unitPass(t *testing.T, a *Applier, b *pt.Builder, mode Mode) Result {
	t.Helper()
	p, err := b.Load()
	if err != nil {
		t.Fatal(err)
	}
	res, _ := a.Run(context.Background(), p, mode)
	return res
}

// A transient Get error on a delete already tracked is reported, not a failed task (as the CVO).
func TestTrackedDeleteSurvivesATransientGetError(t *testing.T) {
	var failGets bool
	c := pt.FakeClient(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if failGets && (key.Name == "x" || key.Name == "z") {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, key.Name, errors.New("injected"))
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	a := New(c, nil, unitOptions)
	held := pt.WithFinalizers(pt.ConfigMap("app", "x", nil), unitHold)
	unitPass(t, a, pt.New("1.0.0").File(unitFile, held), ModeInstall)
	marked := pt.New("1.0.1").File(unitFile, pt.Delete(pt.ConfigMap("app", "x", nil)))
	if got := unitPass(t, a, marked, ModeUpdate).Task(unitFile).Outcome; got != OutcomeDeleteRequested {
		t.Fatalf("outcome %s, want %s", got, OutcomeDeleteRequested)
	}
	failGets = true
	res := unitPass(t, a, marked, ModeReconcile)
	if res.Err != nil || res.Task(unitFile).Outcome != OutcomeDeleteInProgress {
		t.Fatalf("want the tracked delete still in progress without error, got %s, %v", res.Task(unitFile).Outcome, res.Err)
	}
	if w := res.Warnings(); len(w) != 1 || w[0] != `Cannot check delete progress of configmap "app/x": configmaps "x" is forbidden: injected` {
		t.Fatalf("warnings %q", w)
	}
	// Not tracked: the Get error fails the task (as the CVO), naming the object.
	const zFile = "0000_10_app_01_z.yaml"
	res = unitPass(t, a, marked.Clone().File(zFile, pt.Delete(pt.ConfigMap("app", "z", nil))), ModeReconcile)
	if err := res.Task(zFile).Err; err == nil || err.Error() != `cannot get configmap "app/z" to delete: configmaps "z" is forbidden: injected` {
		t.Fatalf("want the untracked delete to fail naming the object, got %v", err)
	}
}

// A NotFound answer to the Delete means the object is gone: reported requested and completed, not
// a failed task (the CVO fails the task and finds the object gone on its next pass).
func TestDeleteAnsweredNotFoundCompletes(t *testing.T) {
	c := pt.FakeClient(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		_ = c.Delete(ctx, obj, opts...)
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, obj.GetName())
	}})
	a := New(c, nil, unitOptions)
	unitPass(t, a, pt.New("1.0.0").File(unitFile, pt.ConfigMap("app", "x", nil)), ModeInstall)
	res := unitPass(t, a, pt.New("1.0.1").File(unitFile, pt.Delete(pt.ConfigMap("app", "x", nil))), ModeUpdate)
	r := payload.Resource{Version: "v1", Kind: "ConfigMap", Namespace: "app", Name: "x"}
	if res.Err != nil || res.Task(unitFile).Outcome != OutcomeDeleted {
		t.Fatalf("got %s, %v", res.Task(unitFile).Outcome, res.Err)
	}
	want := []string{payload.MsgDeleteRequested(r), payload.MsgDeleteCompleted(r)}
	if got := res.Texts(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("messages %q, want %q", got, want)
	}
	if !res.Upgradeable {
		t.Fatal("nothing is in progress")
	}
}
