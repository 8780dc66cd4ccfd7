package leftovers

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestDiffOLMOrphans(t *testing.T) {
	role := func(uid, group, ns string) Object {
		return obj("ClusterRole", "", "olm.og."+group+".admin-"+uid, uid,
			labels("olm.owner", group, "olm.owner.kind", "OperatorGroup", "olm.owner.namespace", ns))
	}
	group := obj("OperatorGroup", "op-abc-0", "og", "og")
	listed := []string{operatorGroups, "clusterroles.rbac.authorization.k8s.io"}
	scope := Scope{Namespaces: []string{"op-abc-0"}, UIDs: []types.UID{"csv"}}
	tests := []struct {
		name       string
		before     []Object
		after      []Object
		namespaces []string // listed in after
		listed     []string // resource types listed in after
		orphans    []string // UIDs
	}{{
		name:   "a role of a group that exists is churn",
		before: []Object{group},
		after:  []Object{group, role("r1", "og", "op-abc-0")},
	}, {
		name:    "a role of a group that is gone is OLM's orphan",
		after:   []Object{role("r1", "og", "op-abc-0"), role("r2", "og", "op-abc-0")},
		orphans: []string{"r1", "r2"},
	}, {
		name:    "a group of the same name in another namespace does not own it",
		before:  []Object{obj("OperatorGroup", "op-abc-9", "og", "og9")},
		after:   []Object{obj("OperatorGroup", "op-abc-9", "og", "og9"), role("r1", "og", "op-abc-0")},
		orphans: []string{"r1"},
	}, {
		name:    "another group in the namespace does not own it",
		before:  []Object{obj("OperatorGroup", "op-abc-0", "other", "og2")},
		after:   []Object{obj("OperatorGroup", "op-abc-0", "other", "og2"), role("r1", "og", "op-abc-0")},
		orphans: []string{"r1"},
	}, {
		name:       "the group's namespace was not listed: not judged",
		after:      []Object{role("r1", "og", "op-abc-0")},
		namespaces: []string{"elsewhere"},
	}, {
		name:   "OperatorGroups failed to list: not judged",
		after:  []Object{role("r1", "og", "op-abc-0")},
		listed: []string{"clusterroles.rbac.authorization.k8s.io"},
	}, {
		name:       "an orphan of another installation's group is not this one's",
		after:      []Object{role("r1", "og", "other-xyz-0")},
		namespaces: []string{"op-abc-0", "other-xyz-0"},
	}, {
		name:   "an orphan older than the before snapshot is not new",
		before: []Object{role("r1", "og", "op-abc-0")},
		after:  []Object{role("r1", "og", "op-abc-0")},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			after := &Snapshot{Objects: tc.after, Namespaces: tc.namespaces, Listed: tc.listed}
			if after.Namespaces == nil {
				after.Namespaces = scope.Namespaces
			}
			if after.Listed == nil {
				after.Listed = listed
			}
			rep := Diff(&Snapshot{Objects: tc.before}, after, DiffOptions{Scope: scope})
			var got []string
			for _, l := range rep.OLMOrphans {
				got = append(got, string(l.UID))
			}
			if strings.Join(got, ",") != strings.Join(tc.orphans, ",") {
				t.Errorf("OLMOrphans = %v, want %v\nreport:\n%s", got, tc.orphans, rep)
			}
			if !rep.Clean() || len(rep.Unattributed) > 0 {
				t.Errorf("OLM's roles must be neither leftovers nor unattributed:\n%s", rep)
			}
			if len(tc.orphans) > 0 && !strings.Contains(rep.String(), "ClusterRole(s) OLM left behind") {
				t.Errorf("the report does not name OLM's orphans:\n%s", rep)
			}
		})
	}
}
