package operandcleanup

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
)

// The randomized lifecycle test (a small Jepsen for uninstall). A seeded generator draws a sequence of
// concrete operations on one operator installation; lifecycleRun (lifecycle_run_test.go) applies them to
// the API server while the real controller runs, records every operand deletion and checks it against
// this model of what the invariants of doc.go permit. Operations name namespaces and CSVs symbolically
// (op, t1, t2, out; op.v1..op.v3), so a sequence replays in fresh namespaces and can be shrunk.
//
// OLM is simulated by explicit operations, as OLM v0.46 behaves (operator.go): a successor makes its
// predecessor Replacing; a succeeded successor makes it Deleting/Replaced and OLM deletes it; a deleted
// CSV loses its cluster RBAC and OLM's finalizer only when the "olm" operation runs, so a sequence
// without it is OLM stopped. The controller itself is stopped and started by "restart".

// opKind names one operation.
type opKind string

const (
	opInstall        opKind = "install"         // create op.v1 (Succeeded), its cluster RBAC and copies
	opUpgrade        opKind = "upgrade"         // create CSV To (Pending) replacing From; From Replacing
	opSucceed        opKind = "succeed"         // OLM: To Succeeded, its predecessor Deleting/Replaced and deleted
	opOLM            opKind = "olm"             // OLM: deleted CSVs lose their cluster RBAC and OLM's finalizer
	opDeleteCSV      opKind = "delete-csv"      // the user deletes CSV Name
	opToggle         opKind = "toggle"          // the user flips spec.cleanup.enabled on CSV Name
	opCreateOperand  opKind = "create-operand"  // a Widget Name in NS (Held: with the operator's finalizer)
	opDeleteOperand  opKind = "delete-operand"  // the user deletes Widget Name in NS
	opRelease        opKind = "release"         // the operator, while it runs, removes its finalizer from deleting Gears where it watches (NS: only there)
	opRestart        opKind = "restart"         // the controller is stopped and started again
	opDeleteCopy     opKind = "delete-copy"     // the user deletes OLM's copy of CSV Name in NS
	opInstallEnabled opKind = "install-enabled" // opInstall with spec.cleanup.enabled true
	// opRetarget: the OperatorGroup's targets become NS (symbolic, comma-joined; "*" all namespaces). OLM
	// rewrites olm.targetNamespaces on every CSV, deleted ones too, and rolls the operator's Deployment
	// to the new targets only while a CSV is not being deleted.
	opRetarget opKind = "retarget"
	// opInstallOther / opDeleteOther: a second installation of an operator owning the same CRD, in its
	// own namespace (op2) with targets NS, without cleanup; what it serves is never this cleanup's.
	opInstallOther opKind = "install-other"
	opDeleteOther  opKind = "delete-other"
	// opInstallOtherUnplaced: install-other as OLM has not placed it yet (no olm.targetNamespaces, no
	// OperatorGroup, no phase): no cleanup may delete anything until opPlaceOther gives it targets NS.
	opInstallOtherUnplaced opKind = "install-other-unplaced"
	opPlaceOther           opKind = "place-other"
	// opExtensionClaim / opExtensionRelease: an OLM v1 ClusterExtension installs the same CRD (its
	// controller reference on the CRD) and then lets it go: while it has it, its operator serves the
	// CRs in every namespace, so no cleanup may delete any.
	opExtensionClaim   opKind = "extension-claim"
	opExtensionRelease opKind = "extension-release"
)

// lifecycleOp is one concrete operation.
type lifecycleOp struct {
	Kind     opKind
	Name     string // CSV or Widget
	From, To string // upgrade
	NS       string // symbolic namespace
	Held     bool
}

func (o lifecycleOp) String() string {
	var b strings.Builder
	b.WriteString(string(o.Kind))
	for _, kv := range [][2]string{{"name", o.Name}, {"from", o.From}, {"to", o.To}, {"ns", o.NS}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
		}
	}
	if o.Held {
		b.WriteString(" held")
	}
	return b.String()
}

func formatOps(ops []lifecycleOp) string {
	var b strings.Builder
	for i, o := range ops {
		fmt.Fprintf(&b, "\n  %2d. %s", i+1, o)
	}
	return b.String()
}

// installModes maps a mode to its symbolic target namespaces ("*": all namespaces).
var installModes = map[string][]string{
	"OwnNamespace":    {"op"},
	"SingleNamespace": {"t1"},
	"MultiNamespace":  {"t1", "t2"},
	"AllNamespaces":   {"*"},
}

// modeNames is installModes' keys in a stable order (seeded draws must not depend on map order).
var modeNames = []string{"AllNamespaces", "MultiNamespace", "OwnNamespace", "SingleNamespace"}

// retargetChoices are the target sets an OperatorGroup change may draw: the install modes' and the other
// shrunk MultiNamespace set, so targets grow, shrink and change mode.
var retargetChoices = []string{"*", "t1,t2", "op", "t1", "t2"}

func joinSyms(syms []string) string { return strings.Join(syms, ",") }

// upgradeEdges are the replaces edges the generator may use: v1 -> v2 -> v3, and v3 skipping v2.
var upgradeEdges = [][2]string{{"op.v1", "op.v2"}, {"op.v2", "op.v3"}, {"op.v1", "op.v3"}}

// generateSequence draws a mode and n operations from seed. Operations are drawn against the model, so
// most are applicable; an operation whose precondition no longer holds (after shrinking) is a no-op.
// The OLM v1 claims are drawn from a source of their own and added between the n operations, so that a
// seed's other operations stay as they were before those operations existed.
func generateSequence(seed int64, n int) (string, []lifecycleOp) {
	rng := rand.New(rand.NewSource(seed))
	claims := rand.New(rand.NewSource(seed ^ 0x0e47c1a1))
	mode := modeNames[rng.Intn(len(modeNames))]
	m := newModel(installModes[mode])
	var ops []lifecycleOp
	widgets := 0
	for drawn := 0; drawn < n; drawn++ {
		if claims.Intn(8) == 0 {
			o := lifecycleOp{Kind: opExtensionClaim}
			if m.extension {
				o.Kind = opExtensionRelease
			}
			m.apply(o)
			ops = append(ops, o)
		}
		var cands []lifecycleOp
		add := func(weight int, o lifecycleOp) {
			for i := 0; i < weight; i++ {
				cands = append(cands, o)
			}
		}
		if len(m.present()) == 0 {
			add(3, lifecycleOp{Kind: opInstallEnabled})
			add(1, lifecycleOp{Kind: opInstall})
		}
		nsChoices := append([]string{"out"}, m.targets...)
		if m.targets[0] == "*" {
			nsChoices = []string{"op", "t1", "out"}
		}
		ns := nsChoices[rng.Intn(len(nsChoices))]
		widgets++
		add(3, lifecycleOp{Kind: opCreateOperand, NS: ns, Name: fmt.Sprintf("w%d", widgets), Held: rng.Intn(3) > 0})
		if len(m.operands) > 0 {
			w := m.operandNames()[rng.Intn(len(m.operands))]
			add(1, lifecycleOp{Kind: opDeleteOperand, NS: m.operands[w], Name: w})
		}
		for _, e := range upgradeEdges {
			if m.canUpgrade(e[0], e[1]) {
				add(3, lifecycleOp{Kind: opUpgrade, From: e[0], To: e[1]})
			}
		}
		for _, name := range m.present() {
			c := m.csvs[name]
			if c.phase == "Pending" {
				add(2, lifecycleOp{Kind: opSucceed, To: name})
			}
			if !c.deleting {
				add(2, lifecycleOp{Kind: opDeleteCSV, Name: name})
			}
			if m.canToggle(name) {
				add(2, lifecycleOp{Kind: opToggle, Name: name})
			}
			if !c.deleting && m.targets[0] != "*" {
				for _, t := range m.targets {
					if t != "op" {
						add(1, lifecycleOp{Kind: opDeleteCopy, Name: name, NS: t})
					}
				}
			}
		}
		add(2, lifecycleOp{Kind: opOLM})
		add(2, lifecycleOp{Kind: opRelease})
		// A slow finalizer in one namespace: the operator has finished elsewhere.
		add(1, lifecycleOp{Kind: opRelease, NS: nsChoices[rng.Intn(len(nsChoices))]})
		if t := retargetChoices[rng.Intn(len(retargetChoices))]; t != joinSyms(m.targets) {
			add(2, lifecycleOp{Kind: opRetarget, NS: t})
		}
		switch {
		case m.other == nil:
			add(1, lifecycleOp{Kind: opInstallOther, NS: retargetChoices[rng.Intn(len(retargetChoices))]})
			add(1, lifecycleOp{Kind: opInstallOtherUnplaced, NS: retargetChoices[rng.Intn(len(retargetChoices))]})
		case m.otherUnplaced:
			add(2, lifecycleOp{Kind: opPlaceOther})
			add(1, lifecycleOp{Kind: opDeleteOther})
		default:
			add(1, lifecycleOp{Kind: opDeleteOther})
		}
		add(1, lifecycleOp{Kind: opRestart})
		o := cands[rng.Intn(len(cands))]
		m.apply(o)
		m.guessGone()
		ops = append(ops, o)
	}
	return mode, ops
}

// modelCSV is what the model knows of one CSV.
type modelCSV struct {
	replaces string
	phase    string // Succeeded, Pending, Replacing, Deleting (OLM deletes it as replaced)
	deleting bool
	// enabled is the user's choice: set by toggles, inherited by a successor at the upgrade.
	enabled bool
	// olmHeld: OLM's finalizer still holds it (until opOLM).
	olmHeld bool
}

// lifecycleModel is the installation as the operations left it. At run time, CSVs leave it when the API
// server no longer has them (observe); the generator guesses that instead (guessGone).
type lifecycleModel struct {
	targets []string
	// watched: the namespaces the operator's Deployment watches. It follows targets while a CSV is not
	// being deleted (OLM rolls the Deployment); once every CSV is being deleted it stays as it was.
	watched  []string
	csvs     map[string]*modelCSV // present CSVs only
	operands map[string]string    // Widget name -> symbolic namespace (not deleted by the user)
	// other: the targets of the second installation, nil while there is none.
	other []string
	// otherUnplaced: OLM has not given the second installation its targets yet.
	otherUnplaced bool
	// extension: an OLM v1 ClusterExtension has installed the CRD too.
	extension bool
}

func newModel(targets []string) *lifecycleModel {
	return &lifecycleModel{targets: targets, watched: targets, csvs: map[string]*modelCSV{}, operands: map[string]string{}}
}

// followTargets: OLM rolls the operator's Deployment to the current targets while it syncs a CSV, i.e.
// while one is not being deleted (or nothing is installed: the next install starts from them).
func (m *lifecycleModel) followTargets() {
	for _, c := range m.csvs {
		if !c.deleting {
			m.watched = m.targets
			return
		}
	}
	if len(m.csvs) == 0 {
		m.watched = m.targets
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (m *lifecycleModel) present() []string      { return sortedKeys(m.csvs) }
func (m *lifecycleModel) operandNames() []string { return sortedKeys(m.operands) }

func (m *lifecycleModel) successorOf(name string) string {
	for _, n := range m.present() {
		if m.csvs[n].replaces == name {
			return n
		}
	}
	return ""
}

// oldestInstalled: the CSV not being deleted whose predecessor is gone or going ("" if none): the one
// an uninstall that deletes the newest first ends with.
func (m *lifecycleModel) oldestInstalled() string {
	for _, n := range m.present() {
		c := m.csvs[n]
		if p := m.csvs[c.replaces]; !c.deleting && (p == nil || p.deleting) {
			return n
		}
	}
	return ""
}

// isHead: present, not being deleted, and no successor.
func (m *lifecycleModel) isHead(name string) bool {
	c := m.csvs[name]
	return c != nil && !c.deleting && m.successorOf(name) == ""
}

// canToggle: the head, or a CSV being deleted without a successor (the user aborts or resumes a cleanup).
func (m *lifecycleModel) canToggle(name string) bool {
	c := m.csvs[name]
	return c != nil && m.successorOf(name) == "" && (m.isHead(name) || c.deleting)
}

func (m *lifecycleModel) canUpgrade(from, to string) bool {
	if m.csvs[to] != nil || !m.isHead(from) {
		return false
	}
	return m.csvs[from].phase == "Succeeded"
}

// apply advances the model by one operation; false when its precondition does not hold (a no-op).
func (m *lifecycleModel) apply(o lifecycleOp) bool {
	ok := m.applyOp(o)
	m.followTargets()
	return ok
}

func (m *lifecycleModel) applyOp(o lifecycleOp) bool {
	switch o.Kind {
	case opRetarget:
		if o.NS == joinSyms(m.targets) {
			return false
		}
		m.targets = strings.Split(o.NS, ",")
	case opInstallOther, opInstallOtherUnplaced:
		if m.other != nil {
			return false
		}
		m.other, m.otherUnplaced = strings.Split(o.NS, ","), o.Kind == opInstallOtherUnplaced
	case opPlaceOther:
		if !m.otherUnplaced {
			return false
		}
		m.otherUnplaced = false
	case opDeleteOther:
		if m.other == nil {
			return false
		}
		m.other, m.otherUnplaced = nil, false
	case opExtensionClaim, opExtensionRelease:
		if m.extension == (o.Kind == opExtensionClaim) {
			return false
		}
		m.extension = !m.extension
	case opInstall, opInstallEnabled:
		if len(m.csvs) > 0 {
			return false
		}
		m.csvs["op.v1"] = &modelCSV{phase: "Succeeded", enabled: o.Kind == opInstallEnabled, olmHeld: true}
	case opUpgrade:
		if !m.canUpgrade(o.From, o.To) {
			return false
		}
		from := m.csvs[o.From]
		m.csvs[o.To] = &modelCSV{replaces: o.From, phase: "Pending", enabled: from.enabled, olmHeld: true}
		from.phase = "Replacing"
	case opSucceed:
		c := m.csvs[o.To]
		if c == nil || c.phase != "Pending" || c.deleting {
			return false
		}
		c.phase = "Succeeded"
		if p := m.csvs[c.replaces]; p != nil && p.phase == "Replacing" && !p.deleting {
			p.phase, p.deleting = "Deleting", true
		}
	case opOLM:
		for _, n := range m.present() {
			if c := m.csvs[n]; c.deleting {
				c.olmHeld = false
			}
		}
	case opDeleteCSV:
		c := m.csvs[o.Name]
		if c == nil || c.deleting {
			return false
		}
		c.deleting = true
	case opToggle:
		if !m.canToggle(o.Name) {
			return false
		}
		m.csvs[o.Name].enabled = !m.csvs[o.Name].enabled
	case opCreateOperand:
		if _, ok := m.operands[o.Name]; ok {
			return false
		}
		m.operands[o.Name] = o.NS
	case opDeleteOperand:
		if _, ok := m.operands[o.Name]; !ok {
			return false
		}
		delete(m.operands, o.Name)
	case opDeleteCopy:
		c := m.csvs[o.Name]
		return c != nil && !c.deleting
	}
	return true
}

// guessGone is the generator's stand-in for observe: a deleted CSV OLM no longer holds is taken as gone
// (the controller usually finishes quickly).
func (m *lifecycleModel) guessGone() {
	for _, n := range m.present() {
		if c := m.csvs[n]; c.deleting && !c.olmHeld {
			delete(m.csvs, n)
		}
	}
	m.followTargets()
}

// observe keeps only the CSVs the API server still has.
func (m *lifecycleModel) observe(live map[string]bool) {
	for _, n := range m.present() {
		if !live[n] {
			delete(m.csvs, n)
		}
	}
	m.followTargets()
}

// liveSuccessor: a successor of name that is not being deleted, through those that are ("" if none).
func (m *lifecycleModel) liveSuccessor(name string) string {
	seen := map[string]bool{name: true}
	for s := m.successorOf(name); s != "" && !seen[s]; s = m.successorOf(s) {
		if !m.csvs[s].deleting {
			return s
		}
		seen[s] = true
	}
	return ""
}

// permitted returns the symbolic namespaces in which the invariants allow the controller to delete
// operands in this state ("*": all): the cleanable namespaces (targets the operator also watches, that no
// other installation serves), of a CSV being deleted with cleanup enabled (1), not replaced
// (no successor that is not being deleted too, not deleted by OLM as replaced), whose predecessor is not
// still installed (2).
func (m *lifecycleModel) permitted() map[string]bool {
	out := map[string]bool{}
	for _, n := range m.present() {
		c := m.csvs[n]
		if !c.deleting || !c.enabled || c.phase == "Deleting" || m.liveSuccessor(n) != "" {
			continue
		}
		if p := m.csvs[c.replaces]; p != nil && !p.deleting {
			continue
		}
		for _, t := range m.cleanable() {
			out[t] = true
		}
	}
	return out
}

// cleanable: the targets the operator also watches, less what the second installation serves
// (invariant 3).
func (m *lifecycleModel) cleanable() []string {
	return m.notServedByOther(intersectSyms(m.targets, m.watched))
}

// notServedByOther is syms less the namespaces the second installation serves (none while it is
// unplaced: what it will serve is not known), and none while an OLM v1 extension has the CRD.
func (m *lifecycleModel) notServedByOther(syms []string) []string {
	if m.extension {
		return nil
	}
	if m.other == nil {
		return syms
	}
	if m.other[0] == "*" || m.otherUnplaced {
		return nil
	}
	if len(syms) > 0 && syms[0] == "*" {
		syms = []string{"op", "t1", "t2", "out"}
	}
	var left []string
	for _, ns := range syms {
		if intersectSyms(m.other, []string{ns}) == nil {
			left = append(left, ns)
		}
	}
	return left
}

// intersectSyms is the symbolic namespaces in both sets ("*": all).
func intersectSyms(a, b []string) []string {
	switch {
	case a[0] == "*":
		return b
	case b[0] == "*":
		return a
	}
	var out []string
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	return out
}
