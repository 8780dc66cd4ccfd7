package stack

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A teardown that times out says what held the object: the conditions the API server sets on a CRD
// (Terminating) or a Namespace (Namespace*) it cannot finish deleting, and no other condition.
func TestDeletionConditionsNameWhatHoldsAnObject(t *testing.T) {
	crd := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
		map[string]any{"type": "Terminating", "status": "True", "reason": "InstanceDeletionFailed", "message": "could not list instances: x"},
	}}}}
	if got, want := deletionConditions(crd), ", Terminating=True InstanceDeletionFailed: could not list instances: x"; got != want {
		t.Errorf("CRD: %q, want %q", got, want)
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "NamespaceDeletionDiscoveryFailure", "status": "False", "reason": "ResourcesDiscovered"},
		map[string]any{"type": "NamespaceContentRemaining", "status": "True", "reason": "SomeResourcesRemain", "message": "Some resources are remaining: pods. has 1 resource instances"},
	}}}}
	if got, want := deletionConditions(ns), ", NamespaceContentRemaining=True SomeResourcesRemain: Some resources are remaining: pods. has 1 resource instances"; got != want {
		t.Errorf("Namespace: %q, want %q", got, want)
	}
	if got := deletionConditions(&unstructured.Unstructured{Object: map[string]any{}}); got != "" {
		t.Errorf("no status: %q, want nothing", got)
	}
}
