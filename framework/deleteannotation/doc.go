// Package deleteannotation is the spec library of the CVO side: DescribeRemoval declares what removing a
// component with release.openshift.io/delete: "true" must do (updating removes exactly the marked
// objects, a first install never creates them, a cluster that never had them only warns), and Env
// gives one spec its own payload applier, namespace and ClusterOperator, with helpers to build
// payloads (Marked, Dropped, Kept, WithoutMarked) and read the applier's results (TaskOf, Texts).
//
// It is apart from framework/specs so that an operator repo testing operand cleanup does not link
// the payload applier, and a payload author does not link OLM's spec library.
package deleteannotation
