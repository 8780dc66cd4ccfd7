package applier

import (
	"context"
	"errors"
	"testing"

	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// CanUpgradeTo and Run give the same answer for a target that is not SemVer: with no deletion in
// progress both let it start, as the CVO's precondition passes before it parses a version when there
// is no Upgradeable=False; while a deletion is in progress both refuse it, in the same words.
// CanUpgradeTo once refused it in both cases ("not SemVer") while Run started it.
func TestCanUpgradeToAndRunAgreeOnATargetThatIsNotSemVer(t *testing.T) {
	ctx := context.Background()
	const notSemVer = "1.1" // loads (major.minor), but blang/semver, the CVO's parser, rejects it
	held := pt.WithFinalizers(pt.ConfigMap("app", "w", nil), unitHold)
	installed := func(t *testing.T) *Applier {
		t.Helper()
		c := pt.FakeClient()
		a := New(c, nil, unitOptions)
		if _, err := a.Run(ctx, pt.New("1.0.0").File(unitFile, held).MustLoad(), ModeInstall); err != nil {
			t.Fatalf("install: %v", err)
		}
		return a
	}

	t.Run("no deletion in progress: both start it", func(t *testing.T) {
		a := installed(t)
		if ok, msg, err := a.CanUpgradeTo(ctx, notSemVer); !ok || msg != "" || err != nil {
			t.Fatalf("CanUpgradeTo(%q) = %v, %q, %v; want true", notSemVer, ok, msg, err)
		}
		res, err := a.Run(ctx, pt.New(notSemVer).File(unitFile, held).MustLoad(), ModeUpdate)
		if err != nil || !res.Completed {
			t.Fatalf("Run to %q: completed %v, %v", notSemVer, res.Completed, err)
		}
	})

	t.Run("a deletion in progress: both refuse it, in the same words", func(t *testing.T) {
		a := installed(t)
		marked := pt.New("1.0.1").File(unitFile, pt.Delete(pt.ConfigMap("app", "w", nil)))
		if res := unitPass(t, a, marked, ModeUpdate); res.Err != nil || res.Task(unitFile).Outcome != OutcomeDeleteRequested {
			t.Fatalf("the update marking w: %s, %v", res.Task(unitFile).Outcome, res.Err)
		}
		ok, msg, err := a.CanUpgradeTo(ctx, notSemVer)
		if ok || msg == "" || err != nil {
			t.Fatalf("CanUpgradeTo(%q) while w's delete is held = %v, %q, %v; want refused", notSemVer, ok, msg, err)
		}
		_, err = a.Run(ctx, marked.Clone().Version(notSemVer).MustLoad(), ModeUpdate)
		var blocked *UpgradeBlockedError
		if !errors.As(err, &blocked) || blocked.Message != msg {
			t.Fatalf("Run to %q: want refused with CanUpgradeTo's message %q, got %v", notSemVer, msg, err)
		}
	})
}
