package specs

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cleanup-e2e/cleanup-e2e/framework/hold"
)

// A stalled cleanup's failure names what keeps each operand: nothing deleted it, only the spec's own
// hold, or finalizers the spec did not add (the operator's, which it has not removed).
func TestDescribeOperandSaysWhatKeepsIt(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	operand := func(deleting bool, finalizers ...string) *unstructured.Unstructured {
		o := memcached("mc-all-0", "sample")
		o.SetFinalizers(finalizers)
		if deleting {
			o.SetDeletionTimestamp(&metav1.Time{Time: now.Add(-2 * time.Minute)})
		}
		return o
	}
	for _, c := range []struct {
		name    string
		operand *unstructured.Unstructured
		want    []string
		notWant string
	}{
		{"not deleted", operand(false, "cache.example.com/finalizer"),
			[]string{"Memcached mc-all-0/sample (not being deleted; finalizers [cache.example.com/finalizer])"}, "operator"},
		{"the spec's hold only", operand(true, hold.Finalizer),
			[]string{"being deleted for 2m0s, kept only by the spec's own hold " + hold.Finalizer}, "operator"},
		{"the operator's finalizer", operand(true, "cache.example.com/finalizer", hold.Finalizer),
			[]string{"being deleted for 2m0s, kept by finalizer(s) [cache.example.com/finalizer], which the spec did not add",
				"the operator that owns them has not removed them"}, hold.Finalizer},
	} {
		got := describeOperand(c.operand, now)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q\ndoes not say %q", c.name, got, w)
			}
		}
		if strings.Contains(got, c.notWant) {
			t.Errorf("%s: %q\nshould not mention %q", c.name, got, c.notWant)
		}
	}
}

func TestOthersLeavesOutTheGivenOperands(t *testing.T) {
	ops := &operands{items: []*unstructured.Unstructured{memcached("a", "x"), memcached("b", "x"), memcached("a", "y")}}
	got := ops.others([]*unstructured.Unstructured{memcached("a", "x")})
	if names(got) != "Memcached b/x, Memcached a/y" {
		t.Errorf("others: %s", names(got))
	}
}

// memcached is an operand as the specs track it: kind, namespace and name.
func memcached(ns, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetKind("Memcached")
	o.SetNamespace(ns)
	o.SetName(name)
	return o
}

// warningT is a T that shows warnings apart from its log (as Ginkgo's report does).
type warningT struct {
	T
	warned, logged []string
}

func (w *warningT) Warnf(format string, args ...any) { w.warned = append(w.warned, format) }
func (w *warningT) Logf(format string, args ...any)  { w.logged = append(w.logged, format) }

// A weak input's warning goes where a passing run shows it (Ginkgo's report), else to the log.
func TestWarnfPrefersTheReport(t *testing.T) {
	w := &warningT{}
	warnf(w, "Reconciled is not set")
	if len(w.warned) != 1 || len(w.logged) != 0 {
		t.Errorf("a T with Warnf: warned %q, logged %q", w.warned, w.logged)
	}
	var logged []string
	warnf(logOnlyT{logf: func(f string) { logged = append(logged, f) }}, "Reconciled is not set")
	if len(logged) != 1 || logged[0] != "WARNING: Reconciled is not set" {
		t.Errorf("a T without Warnf: logged %q", logged)
	}
}

type logOnlyT struct {
	T
	logf func(string)
}

func (l logOnlyT) Logf(format string, args ...any) { l.logf(format) }
