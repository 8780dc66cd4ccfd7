package operandcleanup

import (
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestParseTargets(t *testing.T) {
	for _, tc := range []struct {
		in   string
		all  bool
		want string
	}{
		{"", true, ""}, {" ", true, ""}, {"a", false, "a"}, {"b,a,a", false, "a,b"},
		{"a,,b", false, "a,b"}, {"a,", false, "a"}, {",", false, ""},
	} {
		got := parseTargets(tc.in, "test")
		if got.all != tc.all || strings.Join(got.namespaces, ",") != tc.want {
			t.Errorf("parseTargets(%q) = %+v, want all=%v %q", tc.in, got, tc.all, tc.want)
		}
	}
}

func TestPlanAllows(t *testing.T) {
	widget := schema.GroupKind{Group: "g", Kind: "Widget"}
	thing := schema.GroupKind{Group: "g", Kind: "Thing"}
	p := &plan{targets: parseTargets("a,b", ""), allowed: map[schema.GroupKind]bool{widget: true, thing: false}}
	if p.allows(widget, "a") != nil || p.allows(widget, "b") != nil {
		t.Error("target namespaces must be allowed")
	}
	for _, bad := range []struct {
		gk schema.GroupKind
		ns string
	}{{widget, "c"}, {widget, ""}, {thing, ""}, {schema.GroupKind{Group: "g", Kind: "Gadget"}, "a"}} {
		if p.allows(bad.gk, bad.ns) == nil {
			t.Errorf("%v in %q must be refused", bad.gk, bad.ns)
		}
	}
	global := &plan{targets: parseTargets("", ""), allowed: p.allowed}
	if global.allows(thing, "") != nil || global.allows(widget, "anything") != nil {
		t.Error("a global plan allows cluster-scoped and all namespaces")
	}
}

func TestPendingListsAndMessage(t *testing.T) {
	var ops []operand
	for _, n := range []string{"a", "b", "c"} {
		ops = append(ops, operand{GVK: schema.GroupVersionKind{Group: "g", Version: "v1", Kind: "A"}, Namespace: "ns", Name: n})
	}
	ops = append(ops, operand{GVK: schema.GroupVersionKind{Group: "g", Version: "v1", Kind: "B"}, Name: "x"})
	lists, listed := pendingLists(ops, 3)
	if listed != 3 || len(lists) != 1 || len(lists[0].Instances) != 3 {
		t.Fatalf("capped lists: %+v (%d)", lists, listed)
	}
	lists, listed = pendingLists(ops, 10)
	if listed != 4 || len(lists) != 2 || lists[1].Kind != "B" || lists[1].Instances[0].Namespace != "" {
		t.Fatalf("lists: %+v", lists)
	}
	if got := waitingMessage(4, 3, []string{"note"}); got != "waiting for operator to finish cleanup for 4 CRs; status.cleanup.pendingDeletion lists the first 3; note" {
		t.Errorf("message %q", got)
	}
}

func TestWithCleanupStatusConditions(t *testing.T) {
	now := metav1.NewTime(time.Unix(1000, 0))
	csv := &v1alpha1.ClusterServiceVersion{}
	csv.SetPhase(v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonInstallSuccessful, "ok", &now)
	a := withCleanupStatus(csv, ReasonWaitingOnCleanup, "m1", nil, now, nil)
	if len(a.Status.Conditions) != 2 || a.Status.Phase != PhaseCleanup || a.Status.Reason != "WaitingOnCleanup" {
		t.Fatalf("first: %+v", a.Status)
	}
	b := withCleanupStatus(a, ReasonWaitingOnCleanup, "m2", nil, now, nil)
	if len(b.Status.Conditions) != 2 || b.Status.Conditions[1].Message != "m2" {
		t.Fatalf("message change: %+v", b.Status.Conditions)
	}
	for i := 0; i < 30; i++ {
		csv.SetPhase(v1alpha1.ClusterServiceVersionPhase("P"+string(rune('a'+i%26))), "R", "x", &now)
	}
	if c := withCleanupStatus(csv, ReasonWaitingOnCleanup, "m", nil, now, nil); len(c.Status.Conditions) > v1alpha1.ConditionsLengthLimit {
		t.Fatalf("conditions not trimmed: %d", len(c.Status.Conditions))
	}
}

func TestStallClockPersistedInStatus(t *testing.T) {
	t0, t1, t2 := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(1010, 0)), metav1.NewTime(time.Unix(1020, 0))
	csv := &v1alpha1.ClusterServiceVersion{}
	csv.SetPhase(v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonInstallSuccessful, "ok", &t0)
	if _, _, ok := persistedProgress(csv); ok {
		t.Fatal("nothing to resume before the cleanup reported")
	}
	a := withCleanupStatus(csv, ReasonWaitingOnCleanup, waitingMessage(3, 3, nil), nil, t0, &t0)
	since, n, ok := persistedProgress(a)
	if !ok || n != 3 || !since.Equal(t0.Time) {
		t.Fatalf("after first write: %v %d %v", since, n, ok)
	}
	// More CRs (not progress): message changes, the clock stays.
	b := withCleanupStatus(a, ReasonWaitingOnCleanup, waitingMessage(4, 4, []string{"note"}), nil, t1, &t0)
	if since, n, ok := persistedProgress(b); !ok || n != 4 || !since.Equal(t0.Time) || !b.Status.LastUpdateTime.Equal(&t1) {
		t.Fatalf("count up: %v %d %v", since, n, ok)
	}
	// Progress moves the clock; the phase's own lastTransitionTime does not move.
	c := withCleanupStatus(b, ReasonWaitingOnCleanup, waitingMessage(2, 2, nil), nil, t2, &t2)
	if since, n, _ := persistedProgress(c); n != 2 || !since.Equal(t2.Time) || !c.Status.LastTransitionTime.Equal(&t0) || len(c.Status.Conditions) != 2 {
		t.Fatalf("progress: %v %d %+v", since, n, c.Status)
	}
	// Unchanged input is no write; a blocked message is nothing to resume.
	if d := withCleanupStatus(c, ReasonWaitingOnCleanup, c.Status.Message, nil, t2, &t2); !equality.Semantic.DeepEqual(d.Status, c.Status) {
		t.Fatal("unchanged status must stay unchanged")
	}
	if _, _, ok := persistedProgress(withCleanupStatus(c, ReasonWaitingOnCleanup, "operand cleanup blocked: x", nil, t2, nil)); ok {
		t.Fatal("blocked status must not resume a clock")
	}
}

func TestIsReplacedByPhase(t *testing.T) {
	for _, tc := range []struct {
		phase  v1alpha1.ClusterServiceVersionPhase
		reason v1alpha1.ConditionReason
		want   bool
	}{
		// Replacing alone: OLM leaves it when the successor is deleted; the successor decides (csv.go).
		{v1alpha1.CSVPhaseReplacing, v1alpha1.CSVReasonBeingReplaced, false},
		{v1alpha1.CSVPhaseDeleting, v1alpha1.CSVReasonReplaced, true},
		{v1alpha1.CSVPhaseDeleting, v1alpha1.CSVReasonBeingReplaced, false},
		{v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonInstallSuccessful, false},
		{PhaseCleanup, ReasonWaitingOnCleanup, false},
	} {
		c := &v1alpha1.ClusterServiceVersion{}
		c.Status.Phase, c.Status.Reason = tc.phase, tc.reason
		if isReplacedByPhase(c) != tc.want {
			t.Errorf("%s/%s: want %v", tc.phase, tc.reason, tc.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	f, err := ParseFlags([]string{"--stall-timeout=30s", "--metrics-bind-address=:1", "--metrics-bind-address=0", "--health-probe-bind-address=0", "--operator-check-interval=250ms"}, nil)
	if err != nil || f.Options.StallTimeout != 30*time.Second || f.MetricsBindAddress != "0" || f.Options.OperatorCheckInterval != 250*time.Millisecond {
		t.Fatalf("%+v %v", f, err)
	}
	for _, bad := range [][]string{{"--stall-timeout=0"}, {"--delete-concurrency=-1"}, {"--list-page-size=0"}, {"--operator-check-interval=0s"}, {"--nope"}, {"extra"}, {"--leader-elect"}} {
		if _, err := ParseFlags(bad, nil); err == nil {
			t.Errorf("%v must fail", bad)
		}
	}
	o := Options{}.withDefaults()
	c := &v1alpha1.ClusterServiceVersion{}
	c.Annotations = map[string]string{StallTimeoutAnnotation: "bogus"}
	if d, err := o.stallTimeoutFor(c); err == nil || d != DefaultStallTimeout {
		t.Errorf("bad annotation: %v %v", d, err)
	}
}

func TestOperandWatchesBookkeeping(t *testing.T) {
	w := newOperandWatches(nil, nil)
	a, b := types.NamespacedName{Namespace: "n", Name: "a"}, types.NamespacedName{Namespace: "n", Name: "b"}
	g1 := schema.GroupKind{Group: "g", Kind: "One"}
	g2 := schema.GroupKind{Group: "g", Kind: "Two"}
	// Fill the indexes by hand (starting watches needs an API server; covered by the envtest suite).
	pa := &plan{targets: parseTargets("x", ""), allowed: map[schema.GroupKind]bool{g1: true, g2: true}}
	pb := &plan{targets: parseTargets("y", ""), allowed: map[schema.GroupKind]bool{g1: true}}
	w.byGK[g1] = &gkWatch{csvs: map[types.NamespacedName]*plan{a: pa, b: pb}}
	w.byGK[g2] = &gkWatch{csvs: map[types.NamespacedName]*plan{a: pa}}
	w.byCSV[a] = []schema.GroupKind{g1, g2}
	w.byCSV[b] = []schema.GroupKind{g1}

	if got := w.requestsFor(g1, ptr.To("x")); len(got) != 1 || got[0].NamespacedName != a {
		t.Errorf("requestsFor(g1, x) = %v", got)
	}
	if got := w.requestsFor(g1, ptr.To("z")); len(got) != 0 {
		t.Errorf("requestsFor(g1, z) = %v", got)
	}
	w.reset(g1)
	if len(w.byGK) != 1 || len(w.byCSV[b]) != 0 {
		t.Errorf("reset(g1): byGK %v, b %v", w.byGK, w.byCSV[b])
	}
	if len(w.byCSV[a]) != 1 || w.byCSV[a][0] != g2 {
		t.Errorf("reset must keep a's other kinds: %v", w.byCSV[a])
	}
	w.untrack(a)
	if len(w.byGK) != 0 || len(w.byCSV) != 1 {
		t.Errorf("untrack(a): byGK %v byCSV %v", w.byGK, w.byCSV)
	}
}
