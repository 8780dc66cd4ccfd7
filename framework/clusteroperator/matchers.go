package clusteroperator

// Gomega matchers for config.openshift.io/v1 ClusterOperators, for operator repos and this project's
// suites:
//
//	Eventually(getCO).Should(HaveCondition("Upgradeable", "False", "ResourceDeletionInProgress"))
//	Expect(co).To(HaveConditionMessage("Upgradeable", ContainSubstring(`configmap "ns/old"`)))
//	Expect(co).To(HaveOperandVersion("operator", "4.16.0"))
//
// The actual value may be a configv1.ClusterOperator (or pointer), an *unstructured.Unstructured (or
// value), a ClusterOperatorStatus (or pointer) or a []ClusterOperatorStatusCondition /
// []OperandVersion.

import (
	"fmt"

	"github.com/onsi/gomega/format"
	"github.com/onsi/gomega/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
)

// HaveCondition succeeds when the ClusterOperator has a condition of condType with the
// given status ("True", "False", "Unknown") and, unless reason is "", that reason.
func HaveCondition(condType, status, reason string) types.GomegaMatcher {
	return &coConditionMatcher{condType: condType, status: status, reason: reason}
}

// HaveConditionMessage succeeds when the condition of condType exists and its message
// matches message (a string for equality, or a Gomega matcher).
func HaveConditionMessage(condType string, message interface{}) types.GomegaMatcher {
	m, ok := message.(types.GomegaMatcher)
	if !ok {
		m = &coEqualString{want: fmt.Sprint(message)}
	}
	return &coConditionMatcher{condType: condType, message: m}
}

// HaveOperandVersion succeeds when status.versions has name with exactly version.
func HaveOperandVersion(name, version string) types.GomegaMatcher {
	return &coVersionMatcher{name: name, version: version}
}

// HaveRelatedObject succeeds when status.relatedObjects has the group/resource/namespace/name entry.
func HaveRelatedObject(group, resource, namespace, name string) types.GomegaMatcher {
	return &coRelatedMatcher{ref: configv1.ObjectReference{Group: group, Resource: resource, Namespace: namespace, Name: name}}
}

// coStatus extracts a ClusterOperatorStatus from the supported actual types.
func coStatus(actual interface{}) (*configv1.ClusterOperatorStatus, error) {
	switch v := actual.(type) {
	case *configv1.ClusterOperator:
		if v == nil {
			return nil, fmt.Errorf("nil ClusterOperator")
		}
		return &v.Status, nil
	case configv1.ClusterOperator:
		return &v.Status, nil
	case *configv1.ClusterOperatorStatus:
		if v == nil {
			return nil, fmt.Errorf("nil ClusterOperatorStatus")
		}
		return v, nil
	case configv1.ClusterOperatorStatus:
		return &v, nil
	case []configv1.ClusterOperatorStatusCondition:
		return &configv1.ClusterOperatorStatus{Conditions: v}, nil
	case []configv1.OperandVersion:
		return &configv1.ClusterOperatorStatus{Versions: v}, nil
	case unstructured.Unstructured:
		return coStatus(&v)
	case *unstructured.Unstructured:
		if v == nil {
			return nil, fmt.Errorf("nil object")
		}
		var co configv1.ClusterOperator
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(v.Object, &co); err != nil {
			return nil, fmt.Errorf("not a ClusterOperator: %w", err)
		}
		return &co.Status, nil
	}
	return nil, fmt.Errorf("expected a ClusterOperator, its status, conditions or versions; got %T", actual)
}

type coConditionMatcher struct {
	condType, status, reason string
	message                  types.GomegaMatcher
	found                    *configv1.ClusterOperatorStatusCondition
	all                      []configv1.ClusterOperatorStatusCondition
}

func (m *coConditionMatcher) Match(actual interface{}) (bool, error) {
	st, err := coStatus(actual)
	if err != nil {
		return false, err
	}
	m.all = st.Conditions
	m.found = st.FindCondition(configv1.ClusterStatusConditionType(m.condType))
	if m.found == nil {
		return false, nil
	}
	if m.status != "" && string(m.found.Status) != m.status {
		return false, nil
	}
	if m.reason != "" && m.found.Reason != m.reason {
		return false, nil
	}
	if m.message != nil {
		return m.message.Match(m.found.Message)
	}
	return true, nil
}

func (m *coConditionMatcher) want() string {
	s := "condition " + m.condType
	if m.status != "" {
		s += "=" + m.status
	}
	if m.reason != "" {
		s += " with reason " + m.reason
	}
	if m.message != nil {
		s += " with a message matching " + format.Object(m.message, 0)
	}
	return s
}

func (m *coConditionMatcher) describe() string {
	if m.found == nil {
		return fmt.Sprintf("no %s condition; conditions are:\n%s", m.condType, format.Object(m.all, 1))
	}
	return fmt.Sprintf("%s=%s reason=%q message=%q", m.found.Type, m.found.Status, m.found.Reason, m.found.Message)
}

func (m *coConditionMatcher) FailureMessage(interface{}) string {
	return fmt.Sprintf("Expected the ClusterOperator to have %s, but it has %s", m.want(), m.describe())
}

func (m *coConditionMatcher) NegatedFailureMessage(interface{}) string {
	return fmt.Sprintf("Expected the ClusterOperator not to have %s, but it has %s", m.want(), m.describe())
}

type coVersionMatcher struct {
	name, version string
	all           []configv1.OperandVersion
	progress      []configv1.ClusterOperatorStatusCondition // Progressing and Degraded: why a version is not reached
}

func (m *coVersionMatcher) Match(actual interface{}) (bool, error) {
	st, err := coStatus(actual)
	if err != nil {
		return false, err
	}
	m.all = st.Versions
	m.progress = nil
	for _, t := range []configv1.ClusterStatusConditionType{configv1.OperatorProgressing, configv1.OperatorDegraded} {
		if c := st.FindCondition(t); c != nil {
			m.progress = append(m.progress, *c)
		}
	}
	v, ok := st.FindVersion(m.name)
	return ok && v == m.version, nil
}

func (m *coVersionMatcher) FailureMessage(interface{}) string {
	msg := fmt.Sprintf("Expected the ClusterOperator to report version %s=%s, but its versions are %v", m.name, m.version, m.all)
	for _, c := range m.progress {
		msg += fmt.Sprintf("; %s=%s reason=%q message=%q", c.Type, c.Status, c.Reason, c.Message)
	}
	return msg
}

func (m *coVersionMatcher) NegatedFailureMessage(interface{}) string {
	return fmt.Sprintf("Expected the ClusterOperator not to report version %s=%s, but its versions are %v", m.name, m.version, m.all)
}

type coRelatedMatcher struct {
	ref configv1.ObjectReference
	all []configv1.ObjectReference
}

func (m *coRelatedMatcher) Match(actual interface{}) (bool, error) {
	st, err := coStatus(actual)
	if err != nil {
		return false, err
	}
	m.all = st.RelatedObjects
	for _, r := range st.RelatedObjects {
		if r == m.ref {
			return true, nil
		}
	}
	return false, nil
}

func (m *coRelatedMatcher) FailureMessage(interface{}) string {
	return fmt.Sprintf("Expected the ClusterOperator to relate to %+v, but its relatedObjects are %+v", m.ref, m.all)
}

func (m *coRelatedMatcher) NegatedFailureMessage(interface{}) string {
	return fmt.Sprintf("Expected the ClusterOperator not to relate to %+v, but its relatedObjects are %+v", m.ref, m.all)
}

type coEqualString struct{ want string }

func (m *coEqualString) Match(actual interface{}) (bool, error) { return actual == m.want, nil }
func (m *coEqualString) FailureMessage(actual interface{}) string {
	return fmt.Sprintf("equals %q", m.want)
}
func (m *coEqualString) NegatedFailureMessage(actual interface{}) string {
	return fmt.Sprintf("does not equal %q", m.want)
}
