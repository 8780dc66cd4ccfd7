// Package incluster deploys OLM v1 (operator-controller and catalogd v1.2.0) on a cluster with nodes,
// kind first: the in-cluster counterpart of olmv1.Start, which runs them as child processes on envtest.
//
//   - Render: upstream's own manifests (config/ of the operator-controller module in the Go module cache)
//     through kustomize as a library, as upstream's e2e overlay composes them, minus cert-manager: the
//     Secrets its Certificates would write are generated here (olmv1.NewCA) and the CA injected into
//     catalogd's webhook; registries.conf marks the test registry insecure in both managers.
//   - Install / Uninstall: apply and wait until both Deployments are available; remove everything again.
//   - StartOnKind / Running.Stop: a registry (olmv1.StartRegistryAt) on the gateway of kind's Docker
//     network, which the managers reach from their pods, Install, and the registry published for specs.
//
// The manager images come from scripts/images.sh (CatalogdImage, OperatorControllerImage). It is a
// package of its own so that framework/olmv1, which the spec library links, does not link kustomize.
// Where this differs from upstream's e2e: docs/olm-v1.md.
package incluster
