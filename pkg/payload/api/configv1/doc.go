// Package configv1 holds minimal Go types for the config.openshift.io/v1 ClusterOperator, written from
// the documented API (openshift/api cannot be fetched here). Only what the payload applier and the
// matchers need: ClusterOperator, its status (conditions, versions, relatedObjects, extension) and a
// list type, with hand-written deep copies, registered in a scheme with AddToScheme.
package configv1
