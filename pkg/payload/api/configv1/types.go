package configv1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ClusterOperator holds the status of an operator: the versions it reached, its conditions and the
// objects it relates to. It is cluster-scoped; its spec is empty.
type ClusterOperator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterOperatorSpec   `json:"spec"`
	Status ClusterOperatorStatus `json:"status"`
}

// ClusterOperatorSpec is empty: ClusterOperators only carry status.
type ClusterOperatorSpec struct{}

// ClusterOperatorStatus is the observed state of an operator.
type ClusterOperatorStatus struct {
	// Conditions describe the state of the operator's managed and monitored components.
	Conditions []ClusterOperatorStatusCondition `json:"conditions,omitempty"`
	// Versions are the versions the operator and its operands report (name "operator" is required).
	Versions []OperandVersion `json:"versions,omitempty"`
	// RelatedObjects are objects useful when debugging or inspecting the operator.
	RelatedObjects []ObjectReference `json:"relatedObjects,omitempty"`
	// Extension holds operator-specific status.
	Extension runtime.RawExtension `json:"extension"`
}

// OperandVersion is one name/version pair.
type OperandVersion struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ObjectReference identifies a related object by group, resource, namespace and name.
type ObjectReference struct {
	Group     string `json:"group"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// ClusterStatusConditionType is the type of a ClusterOperator condition.
type ClusterStatusConditionType string

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

const (
	// OperatorAvailable: the operand is functional and available in the cluster.
	OperatorAvailable ClusterStatusConditionType = "Available"
	// OperatorProgressing: the operator is actively rolling out new code or configuration.
	OperatorProgressing ClusterStatusConditionType = "Progressing"
	// OperatorDegraded: the operator's current state does not match its desired state over a period.
	OperatorDegraded ClusterStatusConditionType = "Degraded"
	// OperatorUpgradeable: whether minor/major upgrades are safe now.
	OperatorUpgradeable ClusterStatusConditionType = "Upgradeable"
)

// ClusterOperatorStatusCondition is one condition of a ClusterOperator.
type ClusterOperatorStatusCondition struct {
	Type               ClusterStatusConditionType `json:"type"`
	Status             ConditionStatus            `json:"status"`
	LastTransitionTime metav1.Time                `json:"lastTransitionTime"`
	Reason             string                     `json:"reason,omitempty"`
	Message            string                     `json:"message,omitempty"`
}

// ClusterOperatorList is a list of ClusterOperators.
type ClusterOperatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []ClusterOperator `json:"items"`
}

// FindCondition returns the condition of the given type, or nil.
func (s *ClusterOperatorStatus) FindCondition(t ClusterStatusConditionType) *ClusterOperatorStatusCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// FindVersion returns the version reported under name and whether it was found.
func (s *ClusterOperatorStatus) FindVersion(name string) (string, bool) {
	for _, v := range s.Versions {
		if v.Name == name {
			return v.Version, true
		}
	}
	return "", false
}
