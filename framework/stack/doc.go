// Package stack ensures what must run on a cluster for the specs — OLM reconciling, the
// operand-cleanup controller, the ClusterOperator CRD, a suite's own CRDs — on any provider, and
// records in one ledger what it created, so that Teardown removes exactly that.
//
// The split follows Cluster API's test framework: a provider (framework/cluster/...) only creates or
// connects to a cluster, like a bootstrap ClusterProvider; the stack is the `clusterctl init` step that
// installs onto it. Each component is detected first and left alone when it is there (a cluster's own
// OLM or controller is never changed), installed when missing, and recorded with its UID.
//
// Safety rules of Teardown (the ledger is the only list of things it may delete):
//   - it deletes only objects this stack created, newest first, each with a UID precondition: an
//     object deleted and recreated by someone else meanwhile is theirs and stays;
//   - the footprint (CRDs and namespaces the specs leave on purpose) goes only when it did not exist
//     when Ensure ran;
//   - it never removes finalizers: a CRD held by custom resources whose operator is gone is an error
//     naming them, because forcing it would hide a real leak.
//
// OLM is required, never installed: installing it needs its images, which only the cluster can pull;
// the envtest and kind providers bring their own (a child process, upstream's manifests).
package stack
