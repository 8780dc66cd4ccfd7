package leftovers

import (
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func obj(kind, ns, name, uid string, mods ...func(*Object)) Object {
	o := Object{Kind: kind, Namespace: ns, Name: name, UID: types.UID(uid), Version: "v1"}
	switch kind {
	case "Widget", "WidgetClass":
		o.Group = "fixtures.cleanup-e2e.io"
	case "ClusterRole", "ClusterRoleBinding":
		o.Group = "rbac.authorization.k8s.io"
	case "ClusterServiceVersion", "OperatorGroup":
		o.Group = "operators.coreos.com"
	case "Deployment", "ReplicaSet":
		o.Group = "apps"
	}
	for _, m := range mods {
		m(&o)
	}
	return o
}

func labels(kv ...string) func(*Object) {
	return func(o *Object) {
		o.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			o.Labels[kv[i]] = kv[i+1]
		}
	}
}

func owner(kind, name, uid string) func(*Object) {
	return func(o *Object) {
		o.OwnerReferences = append(o.OwnerReferences, metav1.OwnerReference{Kind: kind, Name: name, UID: types.UID(uid)})
	}
}

func snap(objs ...Object) *Snapshot { return &Snapshot{Objects: objs} }

// base: the installation's namespaces exist before the install; a records namespace shared by every
// installation holds another spec's record.
var base = []Object{
	obj("Namespace", "", "op-abc-0", "ns0"),
	obj("Namespace", "", "op-abc-1", "ns1"),
	obj("Namespace", "", "widget-records", "nsr"),
	obj("ConfigMap", "widget-records", "widget.other-xyz-0.sample", "other-rec"),
}

func TestDiff(t *testing.T) {
	scope := Scope{Namespaces: []string{"op-abc-0", "op-abc-1"}, UIDs: []types.UID{"csv", "w-removed"}}
	tests := []struct {
		name         string
		after        []Object
		scope        *Scope
		expected     []Matcher
		leftovers    []string
		expectedOnes []string
		awaitingGC   []string
		unattributed []string
	}{{
		name:  "nothing new: clean",
		after: base,
	}, {
		name: "new object in an installation namespace is a leftover",
		after: append(base[:len(base):len(base)],
			obj("ConfigMap", "op-abc-0", "operator-state", "cm1")),
		leftovers: []string{"ConfigMap op-abc-0/operator-state"},
	}, {
		name: "the leaked record in the shared namespace is attributed by its owner-namespace label",
		after: append(base[:len(base):len(base)],
			obj("ConfigMap", "widget-records", "leaked-widget.op-abc-0.sample", "leak",
				labels("fixtures.cleanup-e2e.io/owner-namespace", "op-abc-0", "fixtures.cleanup-e2e.io/leaked", "true"))),
		leftovers: []string{"ConfigMap widget-records/leaked-widget.op-abc-0.sample"},
	}, {
		name: "attributed by a label naming a removed operand's UID",
		after: append(base[:len(base):len(base)],
			obj("ConfigMap", "widget-records", "rec-by-uid", "leak", labels("owner-uid", "w-removed"))),
		leftovers: []string{"ConfigMap widget-records/rec-by-uid"},
	}, {
		name: "attributed by its name containing a namespace of the installation (whole token only)",
		after: append(base[:len(base):len(base)],
			obj("ClusterRole", "", "widget-op-abc-1-reader", "cr1"),
			obj("ClusterRole", "", "widget-op-abc-12-reader", "cr2")),
		leftovers:    []string{"ClusterRole.rbac.authorization.k8s.io widget-op-abc-1-reader"},
		unattributed: []string{"ClusterRole.rbac.authorization.k8s.io widget-op-abc-12-reader"},
	}, {
		name: "another spec's objects made at the same time are not attributed",
		after: append(base[:len(base):len(base)],
			obj("ConfigMap", "widget-records", "widget.other-xyz-1.sample", "other2", labels("fixtures.cleanup-e2e.io/owner-namespace", "other-xyz-1")),
			obj("Namespace", "", "other-xyz-1", "other-ns")),
		unattributed: []string{"ConfigMap widget-records/widget.other-xyz-1.sample", "Namespace other-xyz-1"},
	}, {
		name: "ownership is followed: a Deployment labelled for the installation, then its ReplicaSet",
		after: append(base[:len(base):len(base)],
			obj("Deployment", "elsewhere", "agent", "dep", labels("for", "op-abc-1")),
			obj("ReplicaSet", "elsewhere", "agent-123", "rs", owner("Deployment", "agent", "dep"))),
		leftovers: []string{"Deployment.apps elsewhere/agent", "ReplicaSet.apps elsewhere/agent-123"},
	}, {
		name: "attributed by an ownerReference to the (removed) CSV: the garbage collector's job",
		after: append(base[:len(base):len(base)],
			obj("Deployment", "elsewhere", "agent", "dep", owner("ClusterServiceVersion", "op.v1", "csv"))),
		awaitingGC: []string{"Deployment.apps elsewhere/agent"},
	}, {
		name: "owned only by a removed operand: awaiting garbage collection, not failed",
		after: append(base[:len(base):len(base)],
			obj("ConfigMap", "op-abc-0", "widget-sample", "wcm", owner("Widget", "sample", "w-removed")),
			obj("ConfigMap", "op-abc-0", "stuck", "stuck", owner("Widget", "sample", "w-removed"), func(o *Object) { o.Deleting = true })),
		awaitingGC: []string{"ConfigMap op-abc-0/widget-sample"},
		leftovers:  []string{"ConfigMap op-abc-0/stuck"},
	}, {
		name: "a declared leftover is expected, not failed",
		after: append(base[:len(base):len(base)],
			obj("ConfigMap", "widget-records", "leaked-widget.op-abc-0.sample", "leak",
				labels("fixtures.cleanup-e2e.io/owner-namespace", "op-abc-0", "fixtures.cleanup-e2e.io/leaked", "true"))),
		expected:     []Matcher{{Kind: "ConfigMap", Namespace: "widget-records", Labels: map[string]string{"fixtures.cleanup-e2e.io/leaked": "*"}}},
		expectedOnes: []string{"ConfigMap widget-records/leaked-widget.op-abc-0.sample"},
	}, {
		name: "kept operands and what points at them are not leftovers",
		after: append(base[:len(base):len(base)],
			obj("WidgetClass", "", "sample-class-op-abc-1", "kept-wc"),
			obj("ConfigMap", "widget-records", "widgetclass.sample-class-op-abc-1", "kept-rec", labels("owner-uid", "kept-wc"))),
		scope: &Scope{Namespaces: scope.Namespaces, UIDs: scope.UIDs, Keep: []types.UID{"kept-wc"}},
	}, {
		name: "churn is ignored: copied CSVs, OperatorGroup ClusterRoles, default SA, root CA, probe",
		after: append(base[:len(base):len(base)],
			obj("ClusterServiceVersion", "op-abc-1", "op.v1", "copy", labels("olm.copiedFrom", "op-abc-0")),
			obj("ClusterRole", "", "olm.og.op-abc-0.admin-xyz", "ogcr", labels("olm.owner.kind", "OperatorGroup", "olm.owner.namespace", "op-abc-0")),
			obj("ServiceAccount", "op-abc-0", "default", "sa"),
			obj("ConfigMap", "op-abc-1", "kube-root-ca.crt", "ca"),
			obj("OperatorGroup", "cleanup-e2e-olm-probe", "probe", "probe")),
	}, {
		name: "a recreated object (same name, new UID) is new",
		after: append(base[:len(base)-1:len(base)-1],
			obj("ConfigMap", "widget-records", "widget.other-xyz-0.sample", "recreated", labels("x", "op-abc-0"))),
		leftovers: []string{"ConfigMap widget-records/widget.other-xyz-0.sample"},
	}, {
		name: "unscoped: everything new counts",
		after: append(base[:len(base):len(base)],
			obj("ClusterRole", "", "unrelated", "cr")),
		scope:     &Scope{Namespaces: scope.Namespaces, Unscoped: true},
		leftovers: []string{"ClusterRole.rbac.authorization.k8s.io unrelated"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := scope
			if tc.scope != nil {
				sc = *tc.scope
			}
			rep := Diff(snap(base...), snap(tc.after...), DiffOptions{Scope: sc, Expected: tc.expected})
			check := func(what string, got []string, want []string) {
				t.Helper()
				sort.Strings(got)
				sort.Strings(want)
				if strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("%s = %q, want %q\nreport:\n%s", what, got, want, rep)
				}
			}
			check("leftovers", keysOf(rep.Leftovers), tc.leftovers)
			check("expected", keysOf(rep.Expected), tc.expectedOnes)
			check("awaiting GC", keysOf(rep.AwaitingGC), tc.awaitingGC)
			var un []string
			for _, o := range rep.Unattributed {
				un = append(un, o.Key())
			}
			check("unattributed", un, tc.unattributed)
			if rep.Clean() != (len(tc.leftovers) == 0) {
				t.Errorf("Clean() = %v", rep.Clean())
			}
		})
	}
}

func keysOf(ls []Leftover) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Key())
	}
	return out
}

func TestReportString(t *testing.T) {
	leak := obj("ConfigMap", "widget-records", "leaked-widget.op-abc-0.sample", "leak",
		labels("fixtures.cleanup-e2e.io/owner-namespace", "op-abc-0", "app.kubernetes.io/managed-by", "widget-operator"))
	leak.Managers = []Manager{{Name: "widget-operator", Operation: "Update"}}
	rep := Diff(snap(base...), snap(append(base[:len(base):len(base)], leak)...), DiffOptions{Scope: Scope{Namespaces: []string{"op-abc-0"}}})
	s := rep.String()
	for _, want := range []string{
		"1 object(s) left behind by the installation (namespaces op-abc-0)",
		"ConfigMap widget-records/leaked-widget.op-abc-0.sample",
		"label fixtures.cleanup-e2e.io/owner-namespace=op-abc-0 names a namespace of the installation",
		"created by field manager widget-operator",
		"app.kubernetes.io/managed-by=widget-operator",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	// Every leftover has its who: line, also when the server kept nothing about its writer.
	leak.Managers = nil
	rep = Diff(snap(base...), snap(append(base[:len(base):len(base)], leak)...), DiffOptions{Scope: Scope{Namespaces: []string{"op-abc-0"}}})
	if s := rep.String(); !strings.Contains(s, "      who: not recorded (the object has no managedFields and no ownerReferences)") {
		t.Errorf("a leftover without managedFields has no who: line:\n%s", s)
	}
}

func TestMatcher(t *testing.T) {
	cm := obj("ConfigMap", "widget-records", "leaked-widget.a.b", "u", labels("leaked", "true"))
	cr := obj("ClusterRole", "", "x", "v")
	for _, tc := range []struct {
		m    Matcher
		o    Object
		want bool
	}{
		{Matcher{}, cm, true},
		{Matcher{Kind: "ConfigMap", Namespace: "widget-*", Name: "leaked-*"}, cm, true},
		{Matcher{Kind: "ConfigMap", Name: "record-*"}, cm, false},
		{Matcher{Labels: map[string]string{"leaked": "*"}}, cm, true},
		{Matcher{Labels: map[string]string{"leaked": "false"}}, cm, false},
		{Matcher{Labels: map[string]string{"other": "*"}}, cm, false},
		{Matcher{Namespace: "-"}, cm, false},
		{Matcher{Namespace: "-"}, cr, true},
		{Matcher{Group: "rbac.authorization.k8s.io"}, cr, true},
		{Matcher{Group: "apps"}, cr, false},
		{Matcher{Func: func(o Object) bool { return o.Name == "x" }}, cr, true},
	} {
		if got := tc.m.Matches(tc.o); got != tc.want {
			t.Errorf("%s matches %s = %v, want %v", tc.m, tc.o.Key(), got, tc.want)
		}
	}
}

func TestContainsToken(t *testing.T) {
	for _, tc := range []struct {
		name, tok string
		want      bool
	}{
		{"leaked-widget.ns-1.sample", "ns-1", true},
		{"ns-1", "ns-1", true},
		{"x-ns-12", "ns-1", false},
		{"ns-12.ns-1", "ns-1", true},
		{"ans-1", "ns-1", false},
		{"", "ns-1", false},
	} {
		if got := containsToken(tc.name, tc.tok); got != tc.want {
			t.Errorf("containsToken(%q, %q) = %v", tc.name, tc.tok, got)
		}
	}
}
