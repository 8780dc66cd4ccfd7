package payload

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a parsed release version: major.minor[.patch][-pre][+build], optional leading "v".
type Version struct {
	Major, Minor, Patch uint64
	Pre, Build          string
}

// ParseVersion parses a release version such as "4.16.3", "v1.2" or "1.2.3-rc.1+abc".
func ParseVersion(s string) (Version, error) {
	var v Version
	rest := strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		rest, v.Build = rest[:i], rest[i+1:]
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		rest, v.Pre = rest[:i], rest[i+1:]
	}
	parts := strings.Split(rest, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return v, fmt.Errorf("invalid version %q: want major.minor[.patch]", s)
	}
	nums := []*uint64{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return v, fmt.Errorf("invalid version %q: %q is not a number", s, p)
		}
		*nums[i] = n
	}
	return v, nil
}

// UpdateKind classifies an update between two versions.
type UpdateKind string

const (
	// UpdateNone: same version (a re-apply).
	UpdateNone UpdateKind = "None"
	// UpdateInitial: no current version (first install).
	UpdateInitial UpdateKind = "Initial"
	// UpdatePatch: same major and minor (z-stream); never gated by Upgradeable.
	UpdatePatch UpdateKind = "Patch"
	// UpdateMinor: different minor, same major; gated by Upgradeable=False.
	UpdateMinor UpdateKind = "Minor"
	// UpdateMajor: different major; gated by Upgradeable=False.
	UpdateMajor UpdateKind = "Major"
)

// Gated reports whether Upgradeable=False blocks this kind of update (minor and major only).
func (k UpdateKind) Gated() bool { return k == UpdateMinor || k == UpdateMajor }

// ClassifyUpdate says whether going from current to target is a major, minor or z-stream (patch)
// update. An empty current is UpdateInitial. Versions that do not parse are an error.
func ClassifyUpdate(current, target string) (UpdateKind, error) {
	if current == "" {
		return UpdateInitial, nil
	}
	if current == target {
		return UpdateNone, nil
	}
	c, err := ParseVersion(current)
	if err != nil {
		return "", err
	}
	t, err := ParseVersion(target)
	if err != nil {
		return "", err
	}
	switch {
	case c.Major != t.Major:
		return UpdateMajor, nil
	case c.Minor != t.Minor:
		return UpdateMinor, nil
	default:
		return UpdatePatch, nil
	}
}
