// Package specs is the spec library operator repos import, in the style of Cluster API's test
// framework: DescribeOperandCleanup(OperandCleanupSpecInput{...}) declares a Ginkgo container whose
// specs run the documented cases against the operator the input describes; the input's Environment
// func hands the specs their cluster when they run (the suite connects it after the tree is built).
// Installation is the same steps one at a time, for cases of your own.
//
// The library links no provider, no kind, no operator-registry and no payload applier
// (deps_test.go): an operator repo's test binary carries only what its specs use.
//
// The specs check behaviour, not an implementation: the finalizer, phase, reason and message they
// expect are the ones the operand-cleanup enhancement and operator-framework/api define.
//
// What a spec leaves: nothing of its own. When it ends it uninstalls what it installed and releases
// the samples it created (by their UIDs): a sample still there is deleted, and the finalizers its
// uninstalled operator left on it are removed, since no one is left to run them (release.go). It never
// touches an object it did not create, so on a shared cluster the specs leave neither Terminating
// namespaces nor undeletable CRDs behind. The one deletion it does not make itself is the cleanup it
// tests: for an AllNamespaces install, the controller deletes every instance of the owned kinds in the
// cluster, so on an existing cluster holding instances the spec did not create, the uninstall is
// refused, naming them (foreign.go).
package specs

import (
	// The envtest provider runs the operand-cleanup controller of the stack in-process.
	_ "github.com/cleanup-e2e/cleanup-e2e/framework/components/operandcleanupruntime"

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
)
