// Package applier applies a payload (package payload) to a cluster the way the OpenShift Cluster
// Version Operator does, on plain Kubernetes: server-side apply of any kind (unstructured + RESTMapper),
// the release.openshift.io/delete annotation with non-blocking deletes and the CVO's progress messages,
// ClusterOperator pre-creation and waiting, and its own ClusterOperator status (Available, Progressing,
// Degraded, Upgradeable). Delete progress and the update under way are persisted (StateStore), so
// they survive applier restarts: a restart neither repeats a Delete nor refuses its own update.
package applier
