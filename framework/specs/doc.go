// Package specs is the spec library operator repos import, in the style of Cluster API's test
// framework: a function such as OperandCleanupSpec(ctx, func() OperandCleanupSpecInput) declares a
// Ginkgo container whose specs run the documented cases against the operator described by the input.
//
// The specs check behaviour, not an implementation: the finalizer, phase, reason and message they
// expect are the ones the operand-cleanup enhancement and operator-framework/api define.
package specs

import (
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// What the operand-cleanup enhancement (as refined by operator-framework/api) makes visible.
const (
	// CleanupFinalizer keeps an opted-in CSV (and its operator) alive until its operands are gone.
	CleanupFinalizer = "operatorframework.io/cleanup-apis"
	// PhaseCleanup is the CSV phase while operands are pending deletion.
	PhaseCleanup operatorsv1alpha1.ClusterServiceVersionPhase = "Cleanup"
	// ReasonWaitingOnCleanup is operator-framework/api's CSVReasonWaitingForCleanupToComplete.
	ReasonWaitingOnCleanup = operatorsv1alpha1.CSVReasonWaitingForCleanupToComplete
	// HoldFinalizer is put by the specs on operands they want to keep pending, whatever the operator.
	HoldFinalizer = "cleanup-e2e.io/hold"
)
