// Package intervals is the one table of how long the framework waits, in the spirit of Cluster API's
// e2e intervals config: every wait that has a default timeout takes it from here by name, and
// $CLEANUP_E2E_WAIT_SCALE multiplies them all — one knob for a slow CI runner (2), or for a fast
// local loop that should fail early (0.5).
//
// Observation windows are not timeouts and are not scaled: "nothing happens for 2 s" (an operand that
// must be kept, a finalizer that must not appear) means the same on any machine. Nor is a grace
// period (how long a stopped process is given between SIGTERM and SIGKILL, a pod's
// terminationGracePeriodSeconds): it is what the operator is promised, not how long the framework
// expects something to take.
//
// Wait (wait.go) is the one polling loop of the framework: it takes a name from this table.
package intervals

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

// Name names a wait.
type Name string

// The waits, with their defaults (before scaling).
const (
	// ClusterReady: a kind cluster's node Ready and its system pods running.
	ClusterReady Name = "cluster-ready"
	// ControlPlaneReady: an envtest control plane's etcd and kube-apiserver answering their health
	// checks and the default namespace there. Each is started once (toolchain.StartEnvtest): a start
	// killed for being slow would begin again from nothing.
	ControlPlaneReady Name = "control-plane-ready"
	// Reachable: the API server of a cluster that is already running answering a process that connects
	// to it (the envtest cluster another Ginkgo process started, a kind cluster kept from an earlier
	// run).
	Reachable Name = "reachable"
	// AdmissionPolicy: a kind cluster's MutatingAdmissionPolicy that keeps local images from being
	// pulled, applied by the API server (a dry-run pod comes back mutated).
	AdmissionPolicy Name = "admission-policy"
	// DockerCommand: one docker command of the kind provider that only reads (info, inspect).
	DockerCommand Name = "docker-command"
	// Request: one request, or one round of a probe's requests, bounded on its own inside a longer wait
	// or after it (a wait's explanation, a probe's delete), so that one hung call does not use it up.
	Request Name = "request"
	// Killed: a process the framework sent SIGKILL gone from the process table.
	Killed Name = "killed"
	// Stopped: what the framework started stopped once told to, its grace period included (an
	// operator the local runtime runs, envtest's etcd and kube-apiserver).
	Stopped Name = "stopped"
	// RuntimeStarted: the local runtime's watch of Deployments synced (framework/localruntime).
	RuntimeStarted Name = "runtime-started"
	// SuiteSetup: a suite's before-suite node (framework/suite): its provider started, its stack
	// installed, its own setup run; and a Go test that starts a provider. A backstop, above the sum of
	// its steps' own timeouts (and a wait for a start slot, toolchain), so that a step's failure, which
	// names its wait, comes before the bare deadline.
	SuiteSetup Name = "suite-setup"
	// GarbageCollecting: the envtest provider's kube-controller-manager deleting a probe's dependent
	// once its owner is gone (its check that the controllers work).
	GarbageCollecting Name = "garbage-collecting"
	// OLMReady: olm-operator reconciling (its probe OperatorGroup gets a status).
	OLMReady Name = "olm-ready"
	// OLMInstall: OLM's upstream manifests applied and its Deployments available on kind.
	OLMInstall Name = "olm-install"
	// DeploymentAvailable: a Deployment the framework installs (the operand-cleanup controller, the
	// payload applier) available.
	DeploymentAvailable Name = "deployment-available"
	// CRDUsable: a CRD Established and its kinds served to the client.
	CRDUsable Name = "crd-usable"
	// CSVSucceeded: an installed or upgraded CSV Succeeded (and a replaced one gone).
	CSVSucceeded Name = "csv-succeeded"
	// CatalogReady: a CatalogSource's registry pod serving.
	CatalogReady Name = "catalog-ready"
	// Subscribed: a Subscription resolved, its bundle unpacked and its InstallPlan complete.
	Subscribed Name = "subscribed"
	// Gone: an object or namespace deleted, finalizers included.
	Gone Name = "gone"
	// WebhookServing: an operator's admission or conversion webhooks callable once its CSV Succeeded —
	// the webhook Service OLM made has a ready endpoint, and the API server's calls reach it (a create
	// refused with "connection refused", "no endpoints available", EOF or a TLS handshake error is
	// tried again until then). OLM reports the install before kube-proxy routes the Service.
	WebhookServing Name = "webhook-serving"
	// SpecStep: each wait of a spec of the spec libraries (operands reconciled, removed, CSV gone, ...).
	SpecStep Name = "spec-step"
	// SpecCleanup: each cleanup a spec registered when it runs in a Go test (specs.FromTesting) or in a
	// mutation check, on a context of its own since the test's may have ended: uninstalling what it
	// installed, releasing its samples.
	SpecCleanup Name = "spec-cleanup"
	// ClusterOperatorLevel: the payload applier waiting for a ClusterOperator of the payload to report
	// the payload's versions, Available and not Degraded (framework/deleteannotation's default of
	// applier.Options.ClusterOperatorTimeout).
	ClusterOperatorLevel Name = "clusteroperator-level"
	// Leftovers: garbage collection and finalizers settling before the leftovers check fails.
	Leftovers Name = "leftovers"
	// MutantCaught: the one wait of a mutation check that must catch the mutant's defect (specs.Mutant's
	// CaughtBy); it lasts its whole timeout on purpose. The case's other waits keep their own timeouts,
	// which the mutant must pass like the real operator.
	MutantCaught Name = "mutant-caught"
	// Quiet: how long a spec watches that something does NOT happen (operands kept after an uninstall,
	// no cleanup finalizer without the opt-in). It bounds the controller's reaction time, not a
	// deadline: longer only makes those specs slower, shorter lets a late reaction pass unseen.
	Quiet Name = "quiet"
)

var defaults = map[Name]time.Duration{
	ClusterReady:         3 * time.Minute,
	ControlPlaneReady:    3 * time.Minute,
	Reachable:            30 * time.Second,
	AdmissionPolicy:      time.Minute,
	DockerCommand:        time.Minute,
	Request:              10 * time.Second,
	Killed:               10 * time.Second,
	Stopped:              30 * time.Second,
	RuntimeStarted:       time.Minute,
	SpecCleanup:          5 * time.Minute,
	ClusterOperatorLevel: time.Minute,
	GarbageCollecting:    90 * time.Second,
	SuiteSetup:           10 * time.Minute,
	OLMReady:             2 * time.Minute,
	OLMInstall:           5 * time.Minute,
	DeploymentAvailable:  2 * time.Minute,
	CRDUsable:            time.Minute,
	CSVSucceeded:         3 * time.Minute,
	CatalogReady:         2 * time.Minute,
	Subscribed:           4 * time.Minute,
	Gone:                 2 * time.Minute,
	WebhookServing:       time.Minute,
	SpecStep:             2 * time.Minute,
	Leftovers:            30 * time.Second,
	MutantCaught:         15 * time.Second,
	Quiet:                2 * time.Second,
}

// Poll is how often a wait checks again. Not scaled, like the observation windows. A check often costs
// one request per object (each operand of a spec), so Gomega's default of 10 ms made the API server
// spend more CPU answering a suite's own polling than on anything the suite tests (e2e/cleanup's API
// server answered ≈ 275 requests/s, most of them GETs of the specs' samples).
const Poll = 100 * time.Millisecond

// Get is the timeout of the named wait: its default times Scale().
func Get(n Name) time.Duration {
	d, ok := defaults[n]
	if !ok {
		panic(fmt.Sprintf("intervals: no wait named %q", n))
	}
	return Scaled(d)
}

// Scaled is d multiplied by $CLEANUP_E2E_WAIT_SCALE: for a timeout that is not in the table (an
// input's own), so that a slow runner can still stretch it.
func Scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Scale())
}

// Or is d when set, else the named wait's timeout (inputs whose Timeout field is optional).
func Or(d time.Duration, n Name) time.Duration {
	if d > 0 {
		return d
	}
	return Get(n)
}

// Scale is $CLEANUP_E2E_WAIT_SCALE (default 1). A value that is not a number > 0 is a setup mistake
// that would make every wait wrong, so it panics with a message naming the variable.
func Scale() float64 {
	v := envvar.WaitScale.Get()
	if v == "" {
		return 1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		panic(fmt.Sprintf("%s=%q: want a number > 0 that multiplies every timeout (e.g. 2 on a slow CI runner)", envvar.WaitScale.Name, v))
	}
	return f
}

// All lists the waits and their scaled timeouts, for logs and docs.
func All() map[Name]time.Duration {
	out := map[Name]time.Duration{}
	for n := range defaults {
		out[n] = Get(n)
	}
	return out
}
