package operandcleanup

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The OperatorGroup's targets changed during an uninstall: OLM rewrites olm.targetNamespaces on the
// deleted CSVs but no longer rolls the operator's Deployment, which goes on watching (and finalizing)
// where it did. The final uninstall of some sequences drops a namespace holding a CR the cleanup deleted,
// lets the operator finish everywhere else first, and checks that nothing is left Terminating.

// shrunkTargets maps a target set to the one an OperatorGroup change leaves it with.
var shrunkTargets = map[string]string{"*": "t1,t2", "t1,t2": "t1", "op": "t1", "t1": "t2", "t2": "t1"}

// heldOperandToDrop creates, before the final uninstall, a Gear held by the operator's finalizer in the
// target namespace the OperatorGroup change will drop, and returns that namespace.
func (r *lifecycleRun) heldOperandToDrop() string {
	next := strings.Split(shrunkTargets[joinSyms(r.model.targets)], ",")
	from := r.model.targets
	if from[0] == "*" {
		from = []string{"op", "t1", "t2", "out"}
	}
	for _, ns := range from {
		if intersectSyms(next, []string{ns}) == nil {
			r.apply(lifecycleOp{Kind: opCreateOperand, NS: ns, Name: "dropped", Held: true})
			return ns
		}
	}
	panic(fmt.Sprintf("shrunkTargets drops nothing from %v", r.model.targets))
}

// shrinkTargetsMidUninstall: the OperatorGroup drops the namespace dropped while the cleanup waits, then
// the operator finishes everywhere else (its finalizer in dropped is the slow one). It returns where the
// cleanup must have removed every operand: the targets both before and after.
func (r *lifecycleRun) shrinkTargetsMidUninstall(dropped string) []string {
	before := r.model.targets
	if r.settle {
		r.settleAfter("the final uninstall's deletes")
	}
	r.apply(lifecycleOp{Kind: opRetarget, NS: shrunkTargets[joinSyms(before)]})
	if r.settle {
		r.settleAfter("the OperatorGroup change dropping " + dropped)
	}
	for _, ns := range []string{"op", "t1", "t2", "out"} {
		if ns != dropped {
			r.apply(lifecycleOp{Kind: opRelease, NS: ns})
		}
	}
	if r.settle {
		r.settleAfter("the operator finishing everywhere but " + dropped)
	}
	return intersectSyms(before, r.model.targets)
}

// checkNothingStuck runs once every CSV is gone, and with it the operator: a Gear still being deleted
// that the user did not delete was deleted by the cleanup and will never be finalized, unless the user
// aborted that cleanup after the Gear's deletion (an abort releases the operator at once).
func (r *lifecycleRun) checkNothingStuck() {
	deletedAt := map[types.UID]time.Time{}
	for _, d := range r.rec.Since(0) {
		deletedAt[d.UID] = d.At
	}
	abandoned := func(uid types.UID) bool {
		at, ok := deletedAt[uid]
		for _, a := range r.aborts {
			if ok && !at.After(a.Add(passGrace)) {
				return true
			}
		}
		return false
	}
	for _, s := range []string{"op", "t1", "t2", "out"} {
		for _, u := range r.gears(s) {
			if u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) > 0 && !r.userDelete[u.GetUID()] && !abandoned(u.GetUID()) {
				r.violate("Gear %s/%s (namespace %q) was deleted by the cleanup and is left Terminating with its finalizers %v: the operator, which watched that namespace, was let go before it finalized it",
					r.ns[s], u.GetName(), s, u.GetFinalizers())
			}
		}
	}
}
