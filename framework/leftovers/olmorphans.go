package leftovers

import (
	"slices"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// operatorGroups is the resource ID of OLM's OperatorGroups in a snapshot's Listed.
const operatorGroups = "operatorgroups.operators.coreos.com"

// olmOrphan reports whether o is a ClusterRole OLM generated for an OperatorGroup that after shows
// gone. olm-operator deletes a group's roles only in its handler of the group's delete event
// (operatorgroup.go, operatorGroupDeleted), and creates them after it wrote the group's status: a group
// deleted in between, or while olm-operator was not running, leaves its roles for ever. Judged only
// where the snapshot saw every OperatorGroup of the group's namespace, so a failed list or an unlisted
// namespace never makes an orphan.
func olmOrphan(o Object, after *Snapshot) bool {
	if !operatorGroupRoles().Matches(o) {
		return false
	}
	name, ns := o.Labels[olm.LabelOwner], o.Labels[olm.LabelOwnerNamespace]
	if name == "" || !slices.Contains(after.Namespaces, ns) || !slices.Contains(after.Listed, operatorGroups) {
		return false
	}
	for _, g := range after.Objects {
		if g.Group == "operators.coreos.com" && g.Kind == "OperatorGroup" && g.Namespace == ns && g.Name == name {
			return false
		}
	}
	return true
}
