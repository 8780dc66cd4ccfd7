package leftovers

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// Scope says what belongs to the installation under test, so that objects made at the same time by
// others (parallel specs, other users of the cluster) are not blamed on it.
type Scope struct {
	// Namespaces are the installation's own namespaces: whatever is new in them is its.
	Namespaces []string
	// UIDs are objects of the installation (its CSV, its operands, removed or not): what points at
	// them (ownerReference, label value) is its.
	UIDs []types.UID
	// Keep are objects the test made and keeps on purpose (operands cleanup must leave alone): they and
	// what points at them are not leftovers.
	Keep []types.UID
	// Unscoped blames every new object on the installation: only when nothing else changes the
	// cluster meanwhile (e.g. a Serial spec on a private cluster).
	Unscoped bool
}

// DiffOptions configure Diff.
type DiffOptions struct {
	Scope Scope
	// Expected leftovers are reported apart and do not count as failures.
	Expected []Matcher
	// Ignore is churn to drop silently, on top of DefaultIgnore (unless NoDefaultIgnore).
	Ignore          []Matcher
	NoDefaultIgnore bool
}

// Leftover is an object the installation left behind.
type Leftover struct {
	Object
	// Why says what links the object to the installation.
	Why string
	// ExpectedBy is the matcher that declared it expected (nil when it was not).
	ExpectedBy *Matcher
}

// Report is the result of a diff.
type Report struct {
	Before, After *Snapshot
	Scope         Scope
	// Leftovers are attributed to the installation and not expected: a clean uninstall has none.
	Leftovers []Leftover
	// Expected are attributed leftovers a matcher declared expected.
	Expected []Leftover
	// AwaitingGC are attributed objects whose every owner is gone: the garbage collector deletes them
	// (it notices new kinds, e.g. a CRD installed moments ago, only every 30s). Not failures.
	AwaitingGC []Leftover
	// OLMOrphans are ClusterRoles OLM generated for one of the installation's OperatorGroups that is
	// gone: OLM's leak, not the operator's (see olmOrphan), so not failures.
	OLMOrphans []Leftover
	// Unattributed are new objects nothing links to the installation (others' work, or leftovers the
	// scope cannot see: see the package documentation).
	Unattributed []Object
}

// Clean reports whether nothing unexpected was left behind.
func (r Report) Clean() bool { return len(r.Leftovers) == 0 }

// Diff returns the objects of after that were not in before (by UID), minus churn, split by whether
// the scope can attribute them to the installation.
func Diff(before, after *Snapshot, opts DiffOptions) Report {
	rep := Report{Before: before, After: after, Scope: opts.Scope}
	if before == nil || after == nil {
		return rep
	}
	ignore := opts.Ignore
	if !opts.NoDefaultIgnore {
		ignore = append(DefaultIgnore(), ignore...)
	}
	old := before.ByUID()
	var fresh, orphans []Object
	for _, o := range after.Objects {
		if _, ok := old[o.UID]; ok {
			continue
		}
		if olmOrphan(o, after) {
			orphans = append(orphans, o)
			continue
		}
		if _, ok := firstMatch(ignore, o); ok {
			continue
		}
		fresh = append(fresh, o)
	}

	sc := newScopeIndex(opts.Scope, before, after)
	for _, o := range orphans {
		if w := sc.attribute(o); w != "" { // others' orphans are others' business
			rep.OLMOrphans = append(rep.OLMOrphans, Leftover{Object: o, Why: w})
		}
	}
	// Kept objects first, transitively: whatever points at a kept object is part of it.
	kept := map[types.UID]bool{}
	for _, u := range opts.Scope.Keep {
		kept[u] = true
	}
	for changed := true; changed; {
		changed = false
		for _, o := range fresh {
			if !kept[o.UID] && pointsAt(o, kept) != "" {
				kept[o.UID], changed = true, true
			}
		}
	}
	// Then attribution, transitively through ownerReferences (a Deployment left in another namespace
	// brings its ReplicaSet).
	why := map[types.UID]string{}
	for _, o := range fresh {
		if !kept[o.UID] {
			if w := sc.attribute(o); w != "" {
				why[o.UID] = w
			}
		}
	}
	for changed := true; changed; {
		changed = false
		attributed := map[types.UID]bool{}
		for u := range why {
			attributed[u] = true
		}
		for _, o := range fresh {
			if kept[o.UID] || why[o.UID] != "" {
				continue
			}
			for _, ref := range o.OwnerReferences {
				if attributed[ref.UID] {
					why[o.UID], changed = fmt.Sprintf("owned by %s %s, a leftover", ref.Kind, ref.Name), true
					break
				}
			}
		}
	}
	present := after.ByUID()
	ownersGone := func(o Object) bool {
		for _, ref := range o.OwnerReferences {
			if _, ok := present[ref.UID]; ok {
				return false
			}
		}
		return len(o.OwnerReferences) > 0 && !o.Deleting
	}
	for _, o := range fresh {
		switch {
		case kept[o.UID]:
		case why[o.UID] != "":
			l := Leftover{Object: o, Why: why[o.UID]}
			if m, ok := firstMatch(opts.Expected, o); ok {
				l.ExpectedBy = &m
				rep.Expected = append(rep.Expected, l)
			} else if ownersGone(o) {
				rep.AwaitingGC = append(rep.AwaitingGC, l)
			} else {
				rep.Leftovers = append(rep.Leftovers, l)
			}
		default:
			rep.Unattributed = append(rep.Unattributed, o)
		}
	}
	return rep
}

type scopeIndex struct {
	s          Scope
	namespaces map[string]bool
	uids       map[types.UID]string // UID → "Kind name" for messages
}

func newScopeIndex(s Scope, snaps ...*Snapshot) scopeIndex {
	idx := scopeIndex{s: s, namespaces: map[string]bool{}, uids: map[types.UID]string{}}
	for _, n := range s.Namespaces {
		idx.namespaces[n] = true
	}
	for _, u := range s.UIDs {
		idx.uids[u] = "an object of the installation"
	}
	// Every object seen in the installation's namespaces, and the namespaces themselves, are its.
	for _, snap := range snaps {
		for _, o := range snap.Objects {
			if idx.namespaces[o.Namespace] || (o.Kind == "Namespace" && o.Group == "" && idx.namespaces[o.Name]) {
				idx.uids[o.UID] = o.Key()
			}
		}
	}
	return idx
}

// attribute says what links o to the installation ("" when nothing does).
func (idx scopeIndex) attribute(o Object) string {
	if idx.namespaces[o.Namespace] {
		return "in namespace " + o.Namespace + " of the installation"
	}
	for _, ref := range o.OwnerReferences {
		if what, ok := idx.uids[ref.UID]; ok {
			return fmt.Sprintf("ownerReference to %s %s (%s)", ref.Kind, ref.Name, what)
		}
	}
	for _, k := range sortedKeys(o.Labels) {
		v := o.Labels[k]
		if idx.namespaces[v] {
			return fmt.Sprintf("label %s=%s names a namespace of the installation", k, v)
		}
		if what, ok := idx.uids[types.UID(v)]; ok {
			return fmt.Sprintf("label %s=%s names %s", k, v, what)
		}
	}
	for _, ns := range sortedKeys(idx.namespaces) {
		if containsToken(o.Name, ns) {
			return "its name contains namespace " + ns + " of the installation"
		}
	}
	if idx.s.Unscoped {
		return "new in the cluster (unscoped diff)"
	}
	return ""
}

// pointsAt returns a description when o refers to one of uids by ownerReference or label value.
func pointsAt(o Object, uids map[types.UID]bool) string {
	for _, ref := range o.OwnerReferences {
		if uids[ref.UID] {
			return "ownerReference " + string(ref.UID)
		}
	}
	for k, v := range o.Labels {
		if uids[types.UID(v)] {
			return "label " + k
		}
	}
	return ""
}

// containsToken reports whether name contains tok as a whole word: not followed or preceded by a
// letter or digit ("ns-1" is in "leaked.ns-1.sample", not in "ns-12").
func containsToken(name, tok string) bool {
	if tok == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(name[i:], tok)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(tok)
		if (start == 0 || !alnum(name[start-1])) && (end == len(name) || !alnum(name[end])) {
			return true
		}
		i = start + 1
	}
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// String renders the report for a failure message: each leftover with what links it to the
// installation and who created it, then the expected ones, then a short list of what was not
// attributed.
func (r Report) String() string {
	var b strings.Builder
	scope := strings.Join(r.Scope.Namespaces, ", ")
	if len(r.Leftovers) == 0 {
		fmt.Fprintf(&b, "no leftovers of the installation (namespaces %s)\n", scope)
	} else {
		fmt.Fprintf(&b, "%d object(s) left behind by the installation (namespaces %s):\n", len(r.Leftovers), scope)
		for _, l := range r.Leftovers {
			writeLeftover(&b, l)
		}
	}
	if len(r.Expected) > 0 {
		fmt.Fprintf(&b, "%d expected leftover(s):\n", len(r.Expected))
		for _, l := range r.Expected {
			writeLeftover(&b, l)
		}
	}
	if len(r.AwaitingGC) > 0 {
		var names []string
		for _, l := range r.AwaitingGC {
			names = append(names, l.Key())
		}
		fmt.Fprintf(&b, "%d object(s) awaiting garbage collection (every owner is gone): %s\n", len(r.AwaitingGC), strings.Join(names, "; "))
	}
	if len(r.OLMOrphans) > 0 {
		fmt.Fprintf(&b, "%d ClusterRole(s) OLM left behind: their OperatorGroup is gone and OLM deletes a group's roles only when it sees the group's delete event (not a failure of the operator; delete them):\n", len(r.OLMOrphans))
		for _, l := range r.OLMOrphans {
			fmt.Fprintf(&b, "  - %s (OperatorGroup %s/%s)\n", l.Key(), l.Labels[olm.LabelOwnerNamespace], l.Labels[olm.LabelOwner])
		}
	}
	if n := len(r.Unattributed); n > 0 {
		const show = 10
		var names []string
		for i, o := range r.Unattributed {
			if i == show {
				names = append(names, fmt.Sprintf("... %d more", n-show))
				break
			}
			names = append(names, o.Key())
		}
		fmt.Fprintf(&b, "%d new object(s) not attributed to the installation (other specs' or unlinked): %s\n", n, strings.Join(names, "; "))
	}
	if r.After != nil && len(r.After.Errors) > 0 {
		fmt.Fprintf(&b, "not listed (leftovers there are invisible): %s\n", strings.Join(r.After.Errors, "; "))
	}
	return b.String()
}

func writeLeftover(b *strings.Builder, l Leftover) {
	state := ""
	if l.Deleting {
		state = " (deleting: waits for finalizers)"
	}
	fmt.Fprintf(b, "  - %s%s\n      why: %s\n", l.Key(), state, l.Why)
	var who []string
	if c := l.CreatedBy(); c != "" {
		who = append(who, "created by field manager "+c)
	}
	if len(l.Managers) > 1 {
		var ms []string
		for _, m := range l.Managers[1:] {
			ms = append(ms, m.Name+" ("+m.Operation+")")
		}
		who = append(who, "then "+strings.Join(ms, ", "))
	}
	for _, ref := range l.OwnerReferences {
		who = append(who, fmt.Sprintf("owner %s %s", ref.Kind, ref.Name))
	}
	if len(who) == 0 {
		// Said rather than left out: the reader looks for the line to find which component to blame.
		who = append(who, "not recorded (the object has no managedFields and no ownerReferences)")
	}
	fmt.Fprintf(b, "      who: %s\n", strings.Join(who, "; "))
	if len(l.Labels) > 0 {
		fmt.Fprintf(b, "      labels: %s\n", renderLabels(l.Labels))
	}
	if l.ExpectedBy != nil {
		fmt.Fprintf(b, "      expected by: %s\n", l.ExpectedBy)
	}
}
