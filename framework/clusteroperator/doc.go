// Package clusteroperator reads and plays config.openshift.io/v1 ClusterOperators in tests: Gomega
// matchers for their conditions, versions and related objects, a getter for Eventually, and
// SetStatus/Report to stand in for the operator that would report them. It is apart from
// framework/matchers because only the CVO side (the payload applier, framework/deleteannotation)
// knows ClusterOperators; an operator repo testing operand cleanup never links it.
package clusteroperator
