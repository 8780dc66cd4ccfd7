package applier

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// A pass superseded by a newer payload (Main cancels it with ErrSuperseded) may stop after any API
// call. For every such point of an update that marks three finalizer-held objects: the pass ends with
// ErrSuperseded or completes, every Delete it sent is recorded in the persisted state (a restarted
// applier knows it), the next full pass completes, each marked object got exactly one Delete over both
// passes (a lost record would make the next pass send a second one), and the unmarked object none.
// Both a z-stream and a minor update: the minor one starts again with its own deletes pending, which
// the Upgradeable precondition must not refuse (it compares with the update under way).
func TestASupersededPassRecordsEveryDeleteItSent(t *testing.T) {
	for _, target := range []string{"1.0.1", "1.1.0"} {
		t.Run(target, func(t *testing.T) { supersedeAfterEachCall(t, target) })
	}
}

func supersedeAfterEachCall(t *testing.T, target string) {
	object := func(i int) string { return fmt.Sprintf("o%d", i) }
	file := func(i int) string { return fmt.Sprintf("0000_10_app_%02d_o.yaml", i) }
	installed, marked := pt.New("1.0.0"), pt.New(target)
	for i := range 4 {
		installed.File(file(i), pt.WithFinalizers(pt.ConfigMap("app", object(i), nil), unitHold))
		if i < 3 {
			marked.File(file(i), pt.Delete(pt.ConfigMap("app", object(i), nil)))
		} else {
			marked.File(file(i), pt.WithFinalizers(pt.ConfigMap("app", object(i), nil), unitHold))
		}
	}
	v1, err := installed.Load()
	if err != nil {
		t.Fatal(err)
	}
	v2, err := marked.Load()
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; ; k++ {
		var calls int
		cancelAfter := -1 // cancel the pass after this many calls; -1: never
		var cancel context.CancelCauseFunc
		deletes := map[string]int{}
		count := func() {
			calls++
			if calls == cancelAfter {
				cancel(ErrSuperseded)
			}
		}
		c := pt.FakeClient(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				defer count()
				if err := ctx.Err(); err != nil { // as a real client: no request once cancelled
					return err
				}
				return c.Get(ctx, key, obj, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				defer count()
				if err := ctx.Err(); err != nil { // as a real client: no request once cancelled
					return err
				}
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				defer count()
				if err := ctx.Err(); err != nil { // as a real client: no request once cancelled
					return err
				}
				return c.Update(ctx, obj, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				defer count()
				if err := ctx.Err(); err != nil {
					return err
				}
				err := c.Delete(ctx, obj, opts...)
				if err == nil {
					deletes[obj.GetName()]++
				}
				return err
			},
			Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				defer count()
				if err := ctx.Err(); err != nil { // the state ConfigMap is saved by Apply
					return err
				}
				return pt.ApplyAsUpdate(ctx, c, obj, opts...)
			},
		})
		if _, err := New(c, nil, unitOptions).Run(context.Background(), v1, ModeInstall); err != nil {
			t.Fatalf("install: %v", err)
		}
		calls, cancelAfter = 0, k
		ctx, cancelFn := context.WithCancelCause(context.Background())
		cancel = cancelFn
		res, err := New(c, nil, unitOptions).Run(ctx, v2, ModeUpdate)
		cancelFn(nil)
		superseded := errors.Is(err, ErrSuperseded)
		if !superseded && (err != nil || !res.Completed) {
			t.Fatalf("cancelled after %d calls: the pass neither completed nor ended superseded: %v", k, err)
		}
		cancelAfter = -1

		restarted := New(c, nil, unitOptions) // a new process: what it knows is what was persisted
		pending, err := restarted.DeletesInProgress(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sent := 0
		for _, n := range deletes {
			sent += n
		}
		if len(pending) != sent {
			t.Fatalf("cancelled after %d calls: %d Delete(s) sent %v, but %d recorded %v: a restarted applier would send them again", k, sent, deletes, len(pending), pending)
		}
		if res, err := restarted.Run(context.Background(), v2, ModeUpdate); err != nil || !res.Completed {
			t.Fatalf("cancelled after %d calls: the next full pass: completed %v, %v", k, res.Completed, err)
		}
		for i := range 4 {
			want := 1
			if i == 3 {
				want = 0
			}
			if got := deletes[object(i)]; got != want {
				t.Fatalf("cancelled after %d calls: %s got %d Delete(s) over both passes, want %d", k, object(i), got, want)
			}
		}
		if !superseded { // the cancel came after the pass's last call: every point was tried
			if k < 5 {
				t.Fatalf("the update pass made only %d API calls: the test tried too few points", k)
			}
			return
		}
	}
}
