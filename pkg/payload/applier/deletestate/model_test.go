package deletestate

import (
	"strconv"
	"strings"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
)

// The reference model of the delete state, written from the CVO (lib/resourcedelete/helper.go
// GetDeleteProgress and the Delete<Kind> functions; pkg/cvo/internal/generic.go deleteUnstructured;
// the Upgradeable precondition in pkg/payload/precondition/clusterversion/upgradeable.go) and seed
// 001, plus this applier's documented deviations (pkg/payload/README.md):
//   - records are persisted, so a restart changes nothing (the CVO forgets them);
//   - a manifest applied again (not marked) ends its object's record (the CVO never does; its
//     restart on every upgrade hides that);
//   - a pending record whose manifest left the payload is still checked each pass;
//   - a record knows the object it deleted by UID: an object re-created under the name completes a
//     pending delete, and an update deletes an object that is back after a verified one (the CVO,
//     restarted by every update, holds no record then and deletes it as untracked);
//   - the update under way is persisted (State.Target) where the CVO keeps it in ClusterVersion's
//     status.desired: either way the precondition compares a later update with it.

// record is what the applier remembers about deleting one object.
type record int

const (
	noRecord record = iota
	pending         // delete requested, object not yet seen gone
	verified        // object seen gone
)

func (r record) String() string { return [...]string{"none", "pending", "verified"}[r] }

// live is an object's state in the cluster.
type live int

const (
	absent live = iota
	present
	terminating // deleted, held by a finalizer
)

func (l live) String() string { return [...]string{"absent", "present", "terminating"}[l] }

type model struct {
	objects [numObjects]live
	held    [numObjects]bool // the live object carries the hold finalizer
	uid     [numObjects]int  // which object of that name is live: each create makes a new one
	records [numObjects]record
	recFor  [numObjects]int // the uid a record's Delete was issued for (0: none, found absent)
	version string          // last completely applied payload
	target  string          // an update started and not completed since ("" when none): the precondition's "from"
}

// expectation is what one pass must do.
type expectation struct {
	blocked   bool
	completed bool
	outcomes  [numObjects]applier.Outcome // "" where the payload has no manifest
}

func (m *model) pass(p payloadSpec, mode applier.Mode) expectation {
	var exp expectation
	for i, man := range p.manifests {
		if man == noManifest && m.records[i] == pending && m.gone(i) {
			m.records[i] = verified
		}
	}
	from := m.version
	if m.target != "" {
		from = m.target // the CVO compares with status.desired: the update under way
	}
	// A z-stream retarget of a minor update under way also looks at the pending deletes (to warn).
	retarget := m.target != "" && m.target != p.version && sameMinor(m.target, p.version) && gated(m.version, m.target)
	if mode == applier.ModeUpdate && (gated(from, p.version) || retarget) {
		stillPending := false
		for i := range m.records {
			if m.records[i] == pending && m.gone(i) {
				m.records[i] = verified
			}
			stillPending = stillPending || m.records[i] == pending
		}
		if stillPending && !retarget {
			exp.blocked = true
			return exp
		}
	}
	if mode == applier.ModeUpdate {
		m.target = p.version
		if m.target == m.version {
			m.target = ""
		}
	}
	exp.completed = true
	for i, man := range p.manifests {
		switch man {
		case noManifest:
		case invalid:
			exp.outcomes[i] = applier.OutcomeFailed
			exp.completed = false
		case apply:
			m.apply(i)
			exp.outcomes[i] = applier.OutcomeApplied
		case mark:
			exp.outcomes[i] = m.deleteTask(i, mode)
		}
	}
	if exp.completed {
		m.version, m.target = p.version, ""
	}
	return exp
}

// gone: the object a pending record's Delete was issued for no longer exists (absent, or another
// object of that name was created since).
func (m *model) gone(i int) bool { return m.objects[i] == absent || m.uid[i] != m.recFor[i] }

// deleteTask is one marked manifest: the CVO's rules.
func (m *model) deleteTask(i int, mode applier.Mode) applier.Outcome {
	if m.records[i] == pending && m.objects[i] != absent && m.gone(i) {
		m.records[i] = verified // a re-created object: the delete requested is complete
	}
	switch {
	case m.records[i] == verified && m.objects[i] != absent && mode != applier.ModeUpdate:
		return applier.OutcomeReappeared // a warning; an update deletes it again
	case m.records[i] == verified && m.objects[i] != absent:
	case m.records[i] == verified:
		return applier.OutcomeDeleted
	case m.records[i] == pending && m.objects[i] == absent:
		m.records[i] = verified
		return applier.OutcomeDeleted
	case m.records[i] == pending:
		return applier.OutcomeDeleteInProgress
	case m.objects[i] == absent:
		m.records[i], m.recFor[i] = verified, 0 // "not found" warning
		return applier.OutcomeDeleted
	case mode != applier.ModeUpdate:
		return applier.OutcomeDeleteNotRequested
	}
	m.records[i], m.recFor[i] = pending, m.uid[i]
	if m.held[i] {
		m.objects[i] = terminating
	} else {
		m.objects[i] = absent
	}
	return applier.OutcomeDeleteRequested
}

// apply is server-side apply of the manifest; it ends the object's record.
func (m *model) apply(i int) {
	if m.objects[i] == absent {
		m.objects[i] = present
		m.uid[i]++
	}
	if m.objects[i] == present {
		m.held[i] = heldByManifest(i)
	}
	m.records[i] = noRecord
}

// release removes the finalizers of a terminating object: it goes.
func (m *model) release(i int) {
	if m.objects[i] == terminating {
		m.objects[i], m.held[i] = absent, false
	}
}

// externalDelete: someone removes the object (finalizers stripped first).
func (m *model) externalDelete(i int) { m.objects[i], m.held[i] = absent, false }

// externalCreate: someone creates the object (no finalizer) if it does not exist.
func (m *model) externalCreate(i int) {
	if m.objects[i] == absent {
		m.objects[i], m.held[i] = present, false
		m.uid[i]++
	}
}

// gated: the Upgradeable precondition applies to a minor or major update forward (not to a
// z-stream, a re-apply, a first install or a downgrade).
func gated(current, target string) bool {
	if current == "" {
		return false
	}
	c, t := parse(current), parse(target)
	if c[0] == t[0] && c[1] == t[1] {
		return false
	}
	return t[0] > c[0] || (t[0] == c[0] && t[1] > c[1])
}

func sameMinor(a, b string) bool {
	x, y := parse(a), parse(b)
	return x[0] == y[0] && x[1] == y[1]
}

func parse(v string) [3]int {
	var out [3]int
	for i, s := range strings.SplitN(v, ".", 3) {
		out[i], _ = strconv.Atoi(s)
	}
	return out
}
