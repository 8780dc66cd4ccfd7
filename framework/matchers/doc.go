// Package matchers holds Gomega matchers that read like the specs: HavePhase, HavePendingDeletion,
// HaveFinalizer, BeGone for OLM and operand cleanup (ClusterOperator matchers are in
// framework/clusteroperator). Failure messages print the state of the object, not just "expected true".
//
// Use them with controller-runtime's komega to poll the cluster:
//
//	Eventually(komega.Object(csv)).Should(HavePhase("Cleanup"))
//	Eventually(komega.Get(widget)).Should(BeGone())
package matchers
