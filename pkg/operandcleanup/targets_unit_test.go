package operandcleanup

import (
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestTargetsEncodeRoundTrips(t *testing.T) {
	for _, in := range []string{"", "a", "a,b", ","} {
		got := parseTargets(in, "test")
		if back := parseTargets(got.encode(), "test"); back.all != got.all || strings.Join(back.namespaces, ",") != strings.Join(got.namespaces, ",") {
			t.Errorf("parseTargets(%q).encode() = %q reads back as %+v, want %+v", in, got.encode(), back, got)
		}
	}
	if parseTargets(",", "test").encode() == "" {
		t.Fatal("an empty set must never be written as \"\" (all namespaces)")
	}
}

func TestTargetsIntersect(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"", "", "*"}, {"", "a,b", "a,b"}, {"a,b", "", "a,b"}, {"a,b", "b,c", "b"}, {"a", "b", ""},
	} {
		got := parseTargets(tc.a, "a").intersect(parseTargets(tc.b, "b"))
		s := strings.Join(got.namespaces, ",")
		if got.all {
			s = "*"
		}
		if s != tc.want {
			t.Errorf("%q ∩ %q = %q, want %q", tc.a, tc.b, s, tc.want)
		}
	}
}

// A plan made after the targets changed mid-uninstall deletes only where both sets agree, and waits for
// every operand being deleted where the operator watched when the uninstall began.
func TestPlanCountsWhatTheOperatorStillWatches(t *testing.T) {
	widget := schema.GroupKind{Group: "g", Kind: "Widget"}
	thing := schema.GroupKind{Group: "g", Kind: "Thing"} // cluster-scoped
	started, now := parseTargets("a,b", ""), parseTargets("a,c", "")
	p := &plan{targets: now.intersect(started), started: started, allowed: map[schema.GroupKind]bool{widget: true, thing: false}}
	for _, tc := range []struct {
		ns               string
		deleting, counts bool
		deletable        bool
	}{
		{"a", false, true, true}, {"a", true, true, true},
		{"b", false, false, false}, {"b", true, true, false}, // left the targets: only waited for
		{"c", false, false, false}, {"c", true, false, false}, // joined: the operator does not watch it
		{"z", true, false, false},
	} {
		if got := p.counts(widget, tc.ns, tc.deleting); got != tc.counts {
			t.Errorf("counts(Widget in %s, deleting=%t) = %t, want %t", tc.ns, tc.deleting, got, tc.counts)
		}
		if got := p.allows(widget, tc.ns) == nil; got != tc.deletable {
			t.Errorf("allows(Widget in %s) = %t, want %t", tc.ns, got, tc.deletable)
		}
	}
	if p.counts(thing, "", true) {
		t.Error("a cluster-scoped operand is waited for only when the operator was global")
	}
	global := &plan{targets: parseTargets("", "").intersect(parseTargets("a", "")), started: parseTargets("", ""), allowed: p.allowed}
	if !global.counts(thing, "", true) || global.allows(thing, "") == nil {
		t.Error("a global operator narrowed mid-uninstall: a cluster-scoped operand being deleted is waited for, and none is deleted")
	}
	p.excluded = map[schema.GroupKind]*exclusion{widget: {namespaces: map[string]bool{"b": true}}}
	if p.allows(widget, "b") == nil || !p.counts(widget, "b", true) {
		t.Error("an operand another installation serves is never deleted, but once being deleted where the operator watched it is waited for (the other installation may be gone before it finalizes it)")
	}
}

func TestNotRunning(t *testing.T) {
	dep := func(replicas *int32, gen, observed int64, available int32) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "op", Generation: gen}}
		d.Spec.Replicas = replicas
		d.Status.ObservedGeneration, d.Status.AvailableReplicas = observed, available
		return d
	}
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		want string
	}{
		{"scaled to zero", dep(ptr.To[int32](0), 2, 1, 1), "scaled to 0"},
		{"no available replica", dep(ptr.To[int32](2), 3, 3, 0), "no available replica (0 of 2)"},
		{"running", dep(ptr.To[int32](1), 3, 3, 1), ""},
		{"status not observed yet", dep(ptr.To[int32](1), 3, 2, 0), ""},
		{"no deployment controller", dep(nil, 1, 0, 0), ""},
	} {
		got := notRunning(tc.d)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: notRunning = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Recording "all namespaces" ("") on a CSV whose cached copy lacks the annotation is a change: read as
// equal, the patch was skipped and the cleanup followed the current targets (found by the lifecycle test).
func TestRecordingAllNamespacesIsAChange(t *testing.T) {
	without := &v1alpha1.ClusterServiceVersion{}
	with := without.DeepCopy()
	metav1.SetMetaDataAnnotation(&with.ObjectMeta, UninstallTargetsAnnotation, "")
	if equalSpecMeta(without, with) {
		t.Fatal("an empty UninstallTargetsAnnotation compared equal to none")
	}
}
