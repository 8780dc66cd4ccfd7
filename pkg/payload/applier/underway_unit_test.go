package applier

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// A minor update whose pass requested a finalizer-held delete and then failed (an invalid annotation
// further on) is under way: its own pending delete must not refuse it when it starts again after a
// restart, while a further minor step is refused and a z-stream retarget starts with a warning. The
// CVO compares with ClusterVersion's status.desired, which the update already moved; before
// State.Target this applier compared with the last completed version and refused its own update
// until the finalizer went (forever, if the payload removed the operator that owned it).
func TestAnUpdateUnderWayIsNotRefusedByItsOwnDeletes(t *testing.T) {
	ctx := context.Background()
	w := func() *pt.Builder { // 1.1.0 and later delete w, held by a finalizer
		return pt.New("").File("0000_10_app_00_w.yaml", pt.Delete(pt.ConfigMap("app", "w", nil)))
	}
	pending := []string{`configmap "app/w"`}
	v1 := func() *pt.Builder { // installed first; the rollback's target
		return pt.New("1.0.0").
			File("0000_10_app_00_w.yaml", pt.WithFinalizers(pt.ConfigMap("app", "w", nil), unitHold)).
			File("0000_10_app_01_x.yaml", pt.ConfigMap("app", "x", nil))
	}

	// started returns a cluster where 1.0.0 is installed and the update to 1.1.0 failed after
	// requesting w's delete, and a restarted applier on it.
	started := func(t *testing.T) *Applier {
		t.Helper()
		c := pt.FakeClient()
		if _, err := New(c, nil, unitOptions).Run(ctx, v1().MustLoad(), ModeInstall); err != nil {
			t.Fatalf("install: %v", err)
		}
		broken := w().Version("1.1.0").File("0000_10_app_01_x.yaml", pt.DeleteValue(pt.ConfigMap("app", "x", nil), "yes"))
		var perr *PassError
		if _, err := New(c, nil, unitOptions).Run(ctx, broken.MustLoad(), ModeUpdate); !errors.As(err, &perr) {
			t.Fatalf("the update with an invalid annotation: want a failed task, got %v", err)
		}
		restarted := New(c, nil, unitOptions)
		st, err := restarted.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Version != "1.0.0" || st.Target != "1.1.0" || !slices.Equal(deletesInProgress(st), pending) {
			t.Fatalf("after the failed update: version %q, update under way %q, deletes in progress %v; want 1.0.0, 1.1.0, %v",
				st.Version, st.Target, deletesInProgress(st), pending)
		}
		return restarted
	}
	fixed := func(version string) *payload.Payload {
		return w().Version(version).File("0000_10_app_01_x.yaml", pt.ConfigMap("app", "x", nil)).MustLoad()
	}

	t.Run("the same update starts again and completes", func(t *testing.T) {
		a := started(t)
		if ok, msg, err := a.CanUpgradeTo(ctx, "1.1.0"); !ok || err != nil {
			t.Fatalf("CanUpgradeTo(1.1.0), the update under way: %v %q %v", ok, msg, err)
		}
		res, err := a.Run(ctx, fixed("1.1.0"), ModeUpdate)
		if err != nil || !res.Completed {
			t.Fatalf("the update under way, fixed: completed %v, %v", res.Completed, err)
		}
		if len(res.Warnings()) != 0 {
			t.Errorf("the same update starting again is no retarget: warnings %q", res.Warnings())
		}
		st, _ := a.State(ctx)
		if st.Version != "1.1.0" || st.Target != "" {
			t.Fatalf("after completing: version %q, update under way %q; want 1.1.0 and none", st.Version, st.Target)
		}
	})

	t.Run("a further minor step is refused", func(t *testing.T) {
		a := started(t)
		if ok, _, _ := a.CanUpgradeTo(ctx, "1.2.0"); ok {
			t.Fatal("CanUpgradeTo(1.2.0) while 1.1.0's delete is pending: want false")
		}
		_, err := a.Run(ctx, fixed("1.2.0"), ModeUpdate)
		var blocked *UpgradeBlockedError
		if !errors.As(err, &blocked) || blocked.Current != "1.1.0" || blocked.Message != payload.UpgradeableMessage(pending) {
			t.Fatalf("want the update refused, compared with 1.1.0, naming %v; got %v", pending, err)
		}
		if st, _ := a.State(ctx); st.Target != "1.1.0" {
			t.Fatalf("a refused update must leave the update under way: %q", st.Target)
		}
	})

	t.Run("a z-stream retarget starts with a warning", func(t *testing.T) {
		a := started(t)
		res, err := a.Run(ctx, fixed("1.1.1"), ModeUpdate)
		if err != nil || !res.Completed {
			t.Fatalf("the retarget to 1.1.1: completed %v, %v", res.Completed, err)
		}
		want := payload.RetargetWarning("1.0.0", "1.1.0", "1.1.1") + " " + payload.UpgradeableMessage(pending)
		if !slices.Contains(res.Warnings(), want) {
			t.Fatalf("want the warning %q, got %q", want, res.Warnings())
		}
	})

	t.Run("a rollback ends the update under way", func(t *testing.T) {
		a := started(t)
		if _, err := a.Run(ctx, v1().MustLoad(), ModeUpdate); err != nil {
			t.Fatalf("the rollback to 1.0.0: %v", err)
		}
		if st, _ := a.State(ctx); st.Version != "1.0.0" || st.Target != "" {
			t.Fatalf("after the rollback: version %q, update under way %q; want 1.0.0 and none", st.Version, st.Target)
		}
	})
}

func deletesInProgress(st State) []string {
	var out []string
	for _, d := range st.Deletes {
		if d.InProgress() {
			out = append(out, d.Resource.String())
		}
	}
	return out
}
