package extensioncleanup_test

import (
	"fmt"
	"math/rand"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// opKind is one operation of the lifecycle test, done by the user, the cluster or an operator of it.
type opKind string

const (
	opWidget    opKind = "create-widget"               // a Widget in NS
	opMode      opKind = "set-opt-in"                  // the UninstallAnnotation set to Mode ("" removes it)
	opRestart   opKind = "restart-controller"          // the ordered-uninstall controller
	opForeign   opKind = "foreign-finalizer"           // on the Index-th Widget (modulo how many there are)
	opUpgrade   opKind = "upgrade"                     // the ClusterExtension to the next version
	opRestartOC opKind = "restart-operator-controller" // OLM v1's manager
	opNamespace opKind = "terminate-namespace"         // NS deleted with its Widgets, then created again
	opUninstall opKind = "delete-extension"            // with Policy; OptOut: the annotation removed 200 ms later
	opInstall   opKind = "install"                     // the ClusterExtension created again at Version with Mode
)

// install is how the first install of a run is made.
type install struct{ Mode, Version string }

func (i install) String() string { return fmt.Sprintf("at %s, opt-in %q", i.Version, i.Mode) }

// lifecycleOp is one generated operation. The runner skips an operation whose precondition does not
// hold when it comes (e.g. an upgrade with nothing installed), so that any sub-list of a generated list,
// as the shrinker makes them, runs.
type lifecycleOp struct {
	Step    int // position in the generated list: a replay keeps steps by it
	Kind    opKind
	NS      string
	Mode    string
	Version string
	Index   int
	Policy  metav1.DeletionPropagation
	OptOut  bool
	// Legacy (delete-extension): an OLM v0 CSV claims the Widget CRD when the ClusterExtension is
	// deleted, and is deleted once a delete-operands uninstall has said it is blocked (invariant 4).
	Legacy bool
	// Unarmed (set-opt-in to a mode): the controller is stopped while the annotation is set, a delete
	// then must be refused (invariant 8: any delete from no opt-in, a foreground one from the other
	// mode), and the controller is started again.
	Unarmed bool
}

func (o lifecycleOp) String() string {
	s := fmt.Sprintf("%d %s", o.Step, o.Kind)
	switch o.Kind {
	case opWidget, opNamespace:
		s += " " + o.NS
	case opMode:
		s += fmt.Sprintf(" %q", o.Mode)
		if o.Unarmed {
			s += ", with the controller stopped and a delete tried if the opt-in changes"
		}
	case opInstall:
		s += fmt.Sprintf(" %s %q", o.Version, o.Mode)
	case opForeign:
		s += fmt.Sprintf(" #%d", o.Index)
	case opUninstall:
		s += " " + string(o.Policy)
		if o.OptOut {
			s += ", opting out in the middle"
		}
		if o.Legacy {
			s += ", an OLM v0 CSV claiming the Widget CRD"
		}
	}
	return s
}

func formatOps(ops []lifecycleOp) string {
	var b strings.Builder
	for _, o := range ops {
		b.WriteString("\n    " + o.String())
	}
	return b.String()
}

func steps(ops []lifecycleOp) string {
	var s []string
	for _, o := range ops {
		s = append(s, fmt.Sprint(o.Step))
	}
	return strings.Join(s, ",")
}

var (
	modes      = []string{"", extensioncleanup.ModeDeleteOperands, extensioncleanup.ModeOrphan}
	namespaces = []string{"team-a", "team-b"}
	policies   = []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground}
)

// generate draws, from seed, the first install and rounds of: three operations on the installed
// extension, its deletion, and (but for the last round) an install again. Installs draw a version below
// the last, so that the upgrade that drops a CRD is one to three upgrades away.
func generate(seed int64, rounds int) (install, []lifecycleOp) {
	rng := rand.New(rand.NewSource(seed))
	// Its own source, so that the other draws of a seed stay what they were before it existed.
	legacy := rand.New(rand.NewSource(seed ^ 0x1e9ac7))
	unarmed := rand.New(rand.NewSource(seed ^ 0x4a4d))
	mode := modes[rng.Intn(len(modes))]
	first := install{Mode: mode, Version: versions[rng.Intn(len(versions)-1)]}
	var ops []lifecycleOp
	add := func(o lifecycleOp) { o.Step = len(ops) + 1; ops = append(ops, o) }
	// Upgrades twice as often: three of them reach the one that drops a CRD.
	kinds := []opKind{opWidget, opMode, opRestart, opForeign, opUpgrade, opUpgrade, opRestartOC, opNamespace}
	for round := 0; round < rounds; round++ {
		cur := mode
		for i := 0; i < 3; i++ {
			o := lifecycleOp{Kind: kinds[rng.Intn(len(kinds))]}
			switch o.Kind {
			case opWidget, opNamespace:
				o.NS = namespaces[rng.Intn(len(namespaces))]
			case opMode:
				o.Mode = modes[rng.Intn(len(modes))]
				cur = o.Mode
				o.Unarmed = unarmed.Intn(2) == 0
			case opForeign:
				o.Index = rng.Intn(8)
			}
			add(o)
		}
		add(lifecycleOp{Kind: opUninstall, Policy: policies[rng.Intn(len(policies))], OptOut: cur != "" && rng.Intn(4) == 0,
			Legacy: legacy.Intn(3) == 0})
		if round < rounds-1 {
			mode = modes[rng.Intn(len(modes))]
			add(lifecycleOp{Kind: opInstall, Mode: mode, Version: versions[rng.Intn(len(versions)-1)]})
		}
	}
	return first, ops
}

// generateBroken is the list that catches a controller releasing early: operations the violation does
// not need first (the shrinker's to drop), then a foreign finalizer on the first Widget and a background
// deletion of the delete-operands extension.
func generateBroken(seed int64) (install, []lifecycleOp) {
	rng := rand.New(rand.NewSource(seed))
	var ops []lifecycleOp
	add := func(o lifecycleOp) { o.Step = len(ops) + 1; ops = append(ops, o) }
	noise := []opKind{opWidget, opRestart, opUpgrade, opRestartOC}
	for i := 0; i < 4; i++ {
		add(lifecycleOp{Kind: noise[rng.Intn(len(noise))], NS: namespaces[rng.Intn(len(namespaces))]})
	}
	add(lifecycleOp{Kind: opForeign, Index: 0})
	add(lifecycleOp{Kind: opUninstall, Policy: metav1.DeletePropagationBackground})
	return install{Mode: extensioncleanup.ModeDeleteOperands, Version: versions[0]}, ops
}
