// Package olmv1 runs OLM v1 (operator-framework/operator-controller: operator-controller and catalogd)
// on the envtest tier and judges what its uninstall does to an operator's custom resources.
//
// What it provides:
//
//   - Start: catalogd and operator-controller as child processes against a running control plane
//     (the envtest provider's), with a self-signed certificate for catalogd's catalog server and
//     webhook, its CA for operator-controller, temporary cache directories, a HOME whose
//     registries.conf marks the local registry insecure, the olmv1-system namespace and both CRDs
//     read from the operator-controller module in the Go module cache (scripts/build-olmv1.sh puts
//     module and binaries there).
//   - StartRegistry: an in-process OCI registry (go-containerregistry) holding a registry+v1 bundle
//     image per bundles/<package>/<version> and a file-based catalog image built from bundles/catalog,
//     without opm.
//   - Judge: a verdict per custom resource after an uninstall (finalized by its operator, removed
//     without its finalizer, stuck Terminating).
//   - ExplainInstallConflict: helm's reason for refusing to install over an object that exists, which
//     operator-controller's condition message leaves out; WaitCondition adds it to its failure.
//
// OLM v1 renders the extension's Deployment like a cluster would; on envtest the provider's local
// runtime (framework/localruntime) runs it, impersonating its ServiceAccount, exactly as for OLM v0.
// On a cluster with nodes (kind), framework/olmv1/incluster deploys the same managers as Deployments.
// Where this differs from upstream's own e2e setup: docs/olm-v1.md.
package olmv1
