// Package cluster defines the Provider abstraction every suite runs against: a Kubernetes cluster with
// OLM, created by this framework (envtest, kind) or handed to it (an existing KUBECONFIG).
package cluster

import (
	"context"

	"k8s.io/client-go/rest"
)

// Provider is a running cluster the specs talk to. Implementations live in sub-packages
// (cluster/envtest, cluster/kind, cluster/existing); the specs never know which one they got.
type Provider interface {
	// Name identifies the provider instance in logs and artifact paths.
	Name() string
	// Kind is the provider type: "envtest", "kind" or "existing".
	Kind() string
	// RESTConfig returns an admin config for the cluster. Callers must not mutate it (use rest.CopyConfig).
	RESTConfig() *rest.Config
	// KubeconfigPath is a kubeconfig file with the same admin credentials, for child processes.
	KubeconfigPath() string
	// CollectArtifacts writes provider-level diagnostics (control-plane and OLM logs) under dir.
	CollectArtifacts(ctx context.Context, dir string) error
	// Stop tears the cluster down (or, for clusters the run did not create, only what the run added).
	// It is idempotent.
	Stop(ctx context.Context) error
}

// OLMStopper is a Provider that can stop and start OLM's olm-operator, so a spec can show what happens
// while OLM is down (a crash, an OLM upgrade): envtest stops its child process, kind scales the
// olm-operator Deployment to zero. StartOLM returns once OLM reconciles again (olm.Reconciling).
type OLMStopper interface {
	StopOLM(ctx context.Context) error
	StartOLM(ctx context.Context) error
}

// Disposable is a Provider whose Stop deletes the cluster itself (envtest; kind unless kept), so what
// a run installed on it needs no teardown first.
type Disposable interface {
	DeletesClusterOnStop() bool
}

// ForeignObjects is a Provider that says whether its cluster may hold objects no run of this framework
// created: a team's own cluster, handed over with KUBECONFIG, may; a cluster the framework created for
// its runs does not. A spec asks it (MayHoldForeignObjects) before what would delete objects it did not
// create, such as an AllNamespaces operand cleanup, which deletes every instance of the operator's kinds.
type ForeignObjects interface {
	MayHoldForeignObjects() bool
}

// MayHoldForeignObjects reports whether p's cluster may hold objects no run of this framework created.
// A provider that does not say (not a ForeignObjects) may: the safe answer for a cluster the framework
// knows nothing about.
func MayHoldForeignObjects(p Provider) bool {
	f, ok := p.(ForeignObjects)
	return !ok || f.MayHoldForeignObjects()
}

// WorkloadLogs is a Provider that keeps what a Deployment's operator wrote, also once the Deployment
// is gone (envtest: the local runtime's log files). On a cluster with nodes a pod's log goes with the
// pod: a spec that needs an uninstalled operator's last words follows its pods' logs (framework/podlogs).
type WorkloadLogs interface {
	WorkloadLog(namespace, deployment string) (string, error)
}

// AuditLogs is a Provider that keeps its API server's audit log, recording at least who made each write
// (envtest). It is what names who let a custom resource go without its operator's finalizer work
// (framework/auditlog): the object's managedFields cannot. A cluster with nodes keeps it on its control
// plane's node, where a test does not read it.
type AuditLogs interface {
	AuditLog() ([]byte, error)
}

// WebhookLimited is a Provider whose API server cannot call the admission or conversion webhooks the
// operators it runs serve. WebhooksUnsupported says why, for the error that stops a spec up front
// instead of letting every sample be rejected later.
type WebhookLimited interface {
	WebhooksUnsupported() string
}
