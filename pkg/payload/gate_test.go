package payload

import (
	"strings"
	"testing"
)

// Issue 13 item 5: the Upgradeable precondition gates only minor and major steps forward, warns on
// a current version that is not SemVer and refuses a target that is not.
func TestUpgradeGateLikeTheCVOPrecondition(t *testing.T) {
	for _, tc := range []struct {
		current, target string
		gated, warns    bool
		err             bool
	}{
		{current: "", target: "1.0.0"},
		{current: "1.0.0", target: "1.0.0"},
		{current: "1.0.0", target: "1.0.1"},
		{current: "1.0.5", target: "1.0.1"},
		{current: "1.0.0", target: "1.1.0", gated: true},
		{current: "1.9.0", target: "2.0.0", gated: true},
		{current: "1.2.0", target: "1.1.9"}, // minor downgrade: the Rollback precondition's business
		{current: "2.0.0", target: "1.5.0"}, // major downgrade
		{current: "1.1.0-rc.1", target: "1.2.0", gated: true},
		{current: "1.1", target: "1.2.0", warns: true}, // not SemVer: warn, do not block
		{current: "v1.1.0", target: "1.2.0", warns: true},
		{current: "1.1.0", target: "1.2", err: true},
		{current: "1.1.0", target: "latest", err: true},
	} {
		gated, warning, err := UpgradeGate(tc.current, tc.target)
		if gated != tc.gated || (warning != "") != tc.warns || (err != nil) != tc.err {
			t.Errorf("UpgradeGate(%q, %q) = %v, %q, %v; want gated=%v warns=%v err=%v", tc.current, tc.target, gated, warning, err, tc.gated, tc.warns, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), tc.target) {
			t.Errorf("the error must name the target version %q: %v", tc.target, err)
		}
	}
}

// What blang/semver v4.0.0's Parse (the CVO's parser) answers for each case: a version it rejects is an
// invalid target here too, not a gated one.
func TestSemVerAsTheCVOParsesIt(t *testing.T) {
	for v, valid := range map[string]bool{
		"4.16.0": true, "4.16.0-rc.1": true, "4.16.0-0": true, "4.16.0-0a": true, "4.16.0-00a": true,
		"4.16.0+001": true, "4.16.0-rc.1+build.5": true, "4.16.0--x": true, "4.16.0-x-": true,
		"4.16.0-alpha.0x1": true,
		"4.16.0-01":        false, "4.16.0-alpha.01": false, "4.16.0-a..b": false, "4.16.0+a..b": false,
		"4.16.0-": false, "4.16.0+": false, "4.16.0-.a": false, "4.16.0-a.": false, "04.1.0": false,
		"4.16": false, "v4.16.0": false,
	} {
		if _, ok := parseSemVer(v); ok != valid {
			t.Errorf("parseSemVer(%q) = %v, blang/semver v4 says %v", v, ok, valid)
		}
	}
}

func TestCanUpgradeIgnoresDeletesForADowngrade(t *testing.T) {
	ok, msg := CanUpgrade("1.2.0", "1.1.0", []string{`configmap "ns/x"`})
	if !ok || msg != "" {
		t.Fatalf("a minor downgrade is not gated: ok=%v msg=%q", ok, msg)
	}
	ok, msg = CanUpgrade("1.1.0", "1.2.0", []string{`configmap "ns/x"`})
	if ok || !strings.Contains(msg, `resources=configmap "ns/x"`) {
		t.Fatalf("a minor update is gated: ok=%v msg=%q", ok, msg)
	}
}

// With no deletion in progress there is no Upgradeable=False, and the CVO's precondition passes
// before it parses a version (upgradeable.go Run): a target that is not SemVer may start then, as
// applier.Run starts it. Only while deletions are in progress is it refused, naming the target.
func TestCanUpgradeRefusesATargetThatIsNotSemVerOnlyWhileDeletionsAreInProgress(t *testing.T) {
	pending := []string{`configmap "ns/x"`}
	for _, tc := range []struct{ current, target string }{
		{"1.1.0", "1.2"},
		{"1.1.0", "v1.1.1"},
		{"1.1.0", "1.1"},
		{"1.1.0", "latest"},
	} {
		if ok, msg := CanUpgrade(tc.current, tc.target, nil); !ok || msg != "" {
			t.Errorf("CanUpgrade(%q, %q) with no deletion in progress = %v, %q; want true", tc.current, tc.target, ok, msg)
		}
		ok, msg := CanUpgrade(tc.current, tc.target, pending)
		if ok || !strings.Contains(msg, `"`+tc.target+`" is not SemVer`) || !strings.HasSuffix(msg, "; "+UpgradeableMessage(pending)) {
			t.Errorf("CanUpgrade(%q, %q) with %v in progress = %v, %q; want refused, naming the target and the deletions", tc.current, tc.target, pending, ok, msg)
		}
	}
}

// A z-stream retarget of a minor or major update under way warns (the CVO's majorOrMinorUpdateFrom);
// nothing else does: the same update starting again, a patch update under way, a downgrade under
// way, a different minor, or no update under way.
func TestRetargetWarningOnlyForAZStreamOfAMinorOrMajorUpdateUnderWay(t *testing.T) {
	for _, tc := range []struct {
		completed, underWay, target string
		warns                       bool
	}{
		{completed: "1.0.0", underWay: "1.1.0", target: "1.1.1", warns: true},
		{completed: "1.9.3", underWay: "2.0.0", target: "2.0.4", warns: true},
		{completed: "1.0.0", underWay: "1.1.2", target: "1.1.0", warns: true}, // a z-stream back within 1.1
		{completed: "1.0.0", underWay: "1.1.0", target: "1.1.0"},
		{completed: "1.0.0", underWay: "", target: "1.0.1"},
		{completed: "1.0.0", underWay: "1.0.1", target: "1.0.2"},
		{completed: "1.2.0", underWay: "1.1.0", target: "1.1.1"},
		{completed: "1.0.0", underWay: "1.1.0", target: "1.2.0"},
		{completed: "1.0.0", underWay: "1.1.0", target: "1.0.0"},
		{completed: "1.0", underWay: "1.1.0", target: "1.1.1"},
		{completed: "1.0.0", underWay: "1.1.0", target: "1.1"},
	} {
		got := RetargetWarning(tc.completed, tc.underWay, tc.target)
		if (got != "") != tc.warns {
			t.Errorf("RetargetWarning(%q, %q, %q) = %q; want a warning: %v", tc.completed, tc.underWay, tc.target, got, tc.warns)
		}
		if got != "" && !(strings.Contains(got, tc.completed) && strings.Contains(got, tc.underWay) && strings.Contains(got, tc.target)) {
			t.Errorf("the warning must name the three versions: %q", got)
		}
	}
}
