package matchers

import (
	"fmt"
	"sort"
	"strings"

	"github.com/onsi/gomega/types"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// HavePhase matches a CSV in the phase (and, when given, with the reason).
func HavePhase(phase operatorsv1alpha1.ClusterServiceVersionPhase, reason ...operatorsv1alpha1.ConditionReason) types.GomegaMatcher {
	want := fmt.Sprintf("be in phase %q", phase)
	if len(reason) > 0 {
		want += fmt.Sprintf(" with reason %q", reason[0])
	}
	return &csvMatcher{want: want, match: func(csv *operatorsv1alpha1.ClusterServiceVersion) bool {
		return csv.Status.Phase == phase && (len(reason) == 0 || csv.Status.Reason == reason[0])
	}}
}

// PendingEntry is one expected entry of status.cleanup.pendingDeletion.
type PendingEntry struct {
	Group, Kind, Namespace, Name string
}

func (e PendingEntry) String() string {
	if e.Namespace == "" {
		return fmt.Sprintf("%s.%s %s", e.Kind, e.Group, e.Name)
	}
	return fmt.Sprintf("%s.%s %s/%s", e.Kind, e.Group, e.Namespace, e.Name)
}

// PendingEntries flattens status.cleanup.pendingDeletion into sorted entries.
func PendingEntries(lists []operatorsv1alpha1.ResourceList) []PendingEntry {
	var out []PendingEntry
	for _, l := range lists {
		for _, i := range l.Instances {
			out = append(out, PendingEntry{Group: l.Group, Kind: l.Kind, Namespace: i.Namespace, Name: i.Name})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].String() < out[b].String() })
	return out
}

// FormatPending renders pendingDeletion compactly for failure messages.
func FormatPending(lists []operatorsv1alpha1.ResourceList) string {
	var s []string
	for _, e := range PendingEntries(lists) {
		s = append(s, e.String())
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// HavePendingDeletion matches a CSV whose status.cleanup.pendingDeletion lists exactly these entries
// (in any order). With no entries it matches an empty list.
func HavePendingDeletion(entries ...PendingEntry) types.GomegaMatcher {
	want := append([]PendingEntry{}, entries...)
	sort.Slice(want, func(a, b int) bool { return want[a].String() < want[b].String() })
	return &csvMatcher{want: fmt.Sprintf("list exactly %v pending deletion", want), match: func(csv *operatorsv1alpha1.ClusterServiceVersion) bool {
		return fmt.Sprint(PendingEntries(csv.Status.Cleanup.PendingDeletion)) == fmt.Sprint(want)
	}}
}

// HavePendingCount matches a CSV listing n instances in status.cleanup.pendingDeletion.
func HavePendingCount(n int) types.GomegaMatcher {
	return &csvMatcher{want: fmt.Sprintf("list %d instances pending deletion", n), match: func(csv *operatorsv1alpha1.ClusterServiceVersion) bool {
		return len(PendingEntries(csv.Status.Cleanup.PendingDeletion)) == n
	}}
}

// HaveCondition matches a CSV whose status.conditions history has an entry with this phase and reason
// whose message contains messageSubstring.
func HaveCondition(phase operatorsv1alpha1.ClusterServiceVersionPhase, reason operatorsv1alpha1.ConditionReason, messageSubstring string) types.GomegaMatcher {
	want := fmt.Sprintf("have a condition phase=%s reason=%s message~%q", phase, reason, messageSubstring)
	return &csvMatcher{want: want, match: func(csv *operatorsv1alpha1.ClusterServiceVersion) bool {
		for _, c := range csv.Status.Conditions {
			if c.Phase == phase && c.Reason == reason && strings.Contains(c.Message, messageSubstring) {
				return true
			}
		}
		return false
	}}
}

// HaveCleanupEnabled matches a CSV with spec.cleanup.enabled equal to enabled.
func HaveCleanupEnabled(enabled bool) types.GomegaMatcher {
	return &csvMatcher{want: fmt.Sprintf("have spec.cleanup.enabled=%v", enabled), match: func(csv *operatorsv1alpha1.ClusterServiceVersion) bool {
		return csv.Spec.Cleanup.Enabled == enabled
	}}
}

// DescribeCSV renders the parts of a CSV's state a failed cleanup spec needs to see.
func DescribeCSV(csv *operatorsv1alpha1.ClusterServiceVersion) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CSV %s/%s phase=%q reason=%q message=%q finalizers=%v deleting=%v cleanup.enabled=%v",
		csv.Namespace, csv.Name, csv.Status.Phase, csv.Status.Reason, csv.Status.Message, csv.Finalizers,
		csv.DeletionTimestamp != nil, csv.Spec.Cleanup.Enabled)
	if p := csv.Status.Cleanup.PendingDeletion; len(p) > 0 {
		fmt.Fprintf(&b, " pendingDeletion=%s", FormatPending(p))
	}
	return b.String()
}

// csvMatcher matches a *ClusterServiceVersion and prints its cleanup-relevant state on failure.
type csvMatcher struct {
	want  string
	match func(*operatorsv1alpha1.ClusterServiceVersion) bool
}

func asCSV(actual any) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	csv, ok := actual.(*operatorsv1alpha1.ClusterServiceVersion)
	if !ok || csv == nil {
		return nil, fmt.Errorf("expected a non-nil *ClusterServiceVersion, got %T", actual)
	}
	return csv, nil
}

func (m *csvMatcher) Match(actual any) (bool, error) {
	csv, err := asCSV(actual)
	if err != nil {
		return false, err
	}
	return m.match(csv), nil
}

func (m *csvMatcher) FailureMessage(actual any) string {
	return fmt.Sprintf("Expected the CSV to %s, but it is: %s", m.want, describeAny(actual))
}

func (m *csvMatcher) NegatedFailureMessage(actual any) string {
	return fmt.Sprintf("Expected the CSV not to %s, but it is: %s", m.want, describeAny(actual))
}

func describeAny(actual any) string {
	csv, err := asCSV(actual)
	if err != nil {
		return err.Error()
	}
	return DescribeCSV(csv)
}
