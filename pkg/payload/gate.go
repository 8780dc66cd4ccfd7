package payload

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// reSemVer is SemVer 2.0.0 as blang/semver v4 (the CVO's parser) accepts it: three numbers without
// leading zeros or a "v", then an optional pre-release of dot-separated, non-empty identifiers (a
// numeric one without leading zeros) and optional build metadata of non-empty identifiers
// (TestSemVerAsTheCVOParsesIt holds what blang's Parse answered).
var reSemVer = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-` + semVerID + `(?:\.` + semVerID + `)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$`)

// semVerID is one pre-release identifier: a number without leading zeros, or alphanumerics with a
// letter or hyphen.
const semVerID = `(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)`

// UpgradeGate decides like the CVO's Upgradeable precondition
// (pkg/payload/precondition/clusterversion/upgradeable.go) whether Upgradeable=False may block an
// update from current to target. Only a minor or major step forward is gated: not a first install,
// a z-stream, a re-apply or a downgrade. A current version that is not SemVer does not block but
// gets a warning (the CVO's InvalidCurrentVersion, non-blocking); a target that is not SemVer is an
// error (InvalidDesiredVersion, blocking).
func UpgradeGate(current, target string) (gated bool, warning string, err error) {
	if current == "" || current == target {
		return false, "", nil
	}
	c, okCurrent := parseSemVer(current)
	if !okCurrent {
		return false, fmt.Sprintf("The current version %q is not SemVer (major.minor.patch); the Upgradeable precondition is not checked for the update to %q.", current, target), nil
	}
	t, okTarget := parseSemVer(target)
	if !okTarget {
		return false, "", fmt.Errorf("target version %q is not SemVer (major.minor.patch, e.g. 4.16.3): set release-metadata's version", target)
	}
	forward := t[0] > c[0] || (t[0] == c[0] && t[1] > c[1])
	return forward, "", nil
}

// parseSemVer returns major, minor and patch of a SemVer version.
func parseSemVer(v string) ([3]uint64, bool) {
	m := reSemVer.FindStringSubmatch(v)
	if m == nil {
		return [3]uint64{}, false
	}
	var out [3]uint64
	for i := range out {
		n, err := strconv.ParseUint(m[i+1], 10, 64)
		if err != nil {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// RetargetWarning is the warning of an update to target that starts while a minor or major update
// from completed to underWay has not completed and deletions are in progress: target is a z-stream
// of underWay, so Upgradeable=False does not refuse it, but the step from completed is still the
// minor or major one. The CVO's Upgradeable precondition warns the same way, without blocking
// (majorOrMinorUpdateFrom in pkg/payload/precondition/clusterversion/upgradeable.go). Empty when no
// such update is under way, or target is underWay itself (the same update starting again).
func RetargetWarning(completed, underWay, target string) string {
	if underWay == "" || target == underWay {
		return ""
	}
	u, okUnderWay := parseSemVer(underWay)
	t, okTarget := parseSemVer(target)
	if !okUnderWay || !okTarget || u[0] != t[0] || u[1] != t[1] {
		return ""
	}
	if forward, _, err := UpgradeGate(completed, underWay); err != nil || !forward { // forward only, as the CVO's UpdateType
		return ""
	}
	kind, _ := ClassifyUpdate(completed, underWay)
	return fmt.Sprintf("The update to %s retargets the %s update from %s to %s, which has not completed: as a z-stream of %s it is not refused while resource deletions are in progress.",
		target, strings.ToLower(string(kind)), completed, underWay, underWay)
}
