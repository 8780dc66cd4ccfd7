// Package envvar is the one table of environment variables the framework reads. Every name is
// prefixed CLEANUP_E2E_, because the framework runs inside other projects' CI, where PROVIDER or SHARD
// may already mean something else (a job with PROVIDER=aws must not get "unknown provider").
//
// The names used before the prefix are still read for a while, with a note on stderr, but only when
// their value is one the framework understands: an unprefixed PROVIDER=aws is someone else's and is
// ignored (said once on stderr), never an error.
//
// Variables that are conventions of the ecosystem keep their names and are not in the table:
// KUBECONFIG (client-go), KUBEBUILDER_ASSETS (controller-runtime's envtest), ARTIFACTS (Prow and
// Cluster API's test jobs), GINKGO_LABEL_FILTER (read by framework/suite as Ginkgo's CLI would).
package envvar

import (
	"fmt"
	"os"
	"sync"
)

// Var is one environment variable the framework reads.
type Var struct {
	// Name is the prefixed name (CLEANUP_E2E_...).
	Name string
	// Legacy is the name read when Name is unset, if it passes Valid; "" when there is none.
	Legacy string
	// Valid says whether a legacy value is meant for the framework (nil: any value is).
	Valid func(string) error
	// Doc says what the variable does, for the table in the README.
	Doc string
	// ByScripts: the scripts set it for their own children; the README names it in a sentence, not in
	// the table a user reads.
	ByScripts bool
}

// The variables. Read them with Get; the README's table lists the same, but for those set ByScripts.
var (
	Provider = Var{Name: "CLEANUP_E2E_PROVIDER", Legacy: "PROVIDER", Valid: oneOf("envtest", "kind", "existing"),
		Doc: "the cluster provider: envtest (default), kind or existing"}
	KubeContext = Var{Name: "CLEANUP_E2E_KUBE_CONTEXT", Legacy: "KUBE_CONTEXT",
		Doc: "the kubeconfig context of the existing provider (kubectl's --context)"}
	Shard = Var{Name: "CLEANUP_E2E_SHARD", Legacy: "SHARD", Valid: nonEmpty,
		Doc: "i/n: label every spec shard-<k>-of-<n> to split a suite across CI jobs"}
	KindCluster = Var{Name: "CLEANUP_E2E_KIND_CLUSTER", Legacy: "KIND_CLUSTER_NAME", Valid: nonEmpty,
		Doc: "the kind cluster's name (default cleanup-e2e)"}
	KeepCluster = Var{Name: "CLEANUP_E2E_KEEP_CLUSTER", Legacy: "KEEP_CLUSTER", Valid: oneOf("0", "1"),
		Doc: "1: the kind cluster outlives the run, and a later run reuses it"}
	KindNodeImage = Var{Name: "CLEANUP_E2E_KIND_NODE_IMAGE", Legacy: "KIND_NODE_IMAGE", Valid: nonEmpty,
		Doc: "the kind node image (default: the one scripts/kind/node-image.sh last recorded)"}
	WaitScale = Var{Name: "CLEANUP_E2E_WAIT_SCALE",
		Doc: "multiplies every timeout of the framework (framework/intervals), e.g. 2 on a slow CI runner"}
	Cache    = Var{Name: "CLEANUP_E2E_CACHE", Doc: "the toolchain cache directory (default <repo>/_cache)"}
	Root     = Var{Name: "CLEANUP_E2E_ROOT", Doc: "this repository's checkout, for a consumer module that needs its bundles or scripts"}
	AuditDir = Var{Name: "CLEANUP_E2E_AUDIT_DIR",
		Doc: "the envtest provider's API server audits every request, not only writes, to <dir>/<cluster>.log, which outlives the run; one JSON event per line (jq sums it up)"}
	EnvtestSeed = Var{Name: "CLEANUP_E2E_ENVTEST_SEED", Valid: oneOf("0", "1"),
		Doc: "0: every envtest control plane starts from an empty etcd instead of a copy of the cached seed (framework/cluster/envtest seed.go)"}
	// JUnitPerRunDir is set by the flake hunt: each run writes its own JUnit file there.
	JUnitPerRunDir = Var{Name: "CLEANUP_E2E_JUNIT_PER_RUN_DIR", Legacy: "JUNIT_PER_RUN_DIR", Valid: nonEmpty,
		Doc:       "write each run's JUnit report to a new file in this directory (the flake hunt sets it)",
		ByScripts: true}
)

// All is every variable, in the order the README lists them.
var All = []Var{Provider, KubeContext, Shard, KindCluster, KeepCluster, KindNodeImage, WaitScale, Cache, Root, AuditDir, EnvtestSeed, JUnitPerRunDir}

// Get returns the variable's value: Name's, else Legacy's when Valid accepts it, else "".
func (v Var) Get() string {
	if s, ok := os.LookupEnv(v.Name); ok {
		return s
	}
	if v.Legacy == "" {
		return ""
	}
	s, ok := os.LookupEnv(v.Legacy)
	if !ok {
		return ""
	}
	if v.Valid != nil {
		if err := v.Valid(s); err != nil {
			noteOnce(v.Legacy, fmt.Sprintf("cleanup-e2e: ignoring %s=%q (%v): it is not for this framework; set %s to configure it",
				v.Legacy, s, err, v.Name))
			return ""
		}
	}
	noteOnce(v.Legacy, fmt.Sprintf("cleanup-e2e: read %s=%q as %s; set %s instead (the unprefixed name will stop being read)",
		v.Legacy, s, v.Name, v.Name))
	return s
}

var noted sync.Map

func noteOnce(key, msg string) {
	if _, seen := noted.LoadOrStore(key, true); !seen {
		fmt.Fprintln(os.Stderr, msg)
	}
}

func oneOf(values ...string) func(string) error {
	return func(s string) error {
		for _, v := range values {
			if s == v {
				return nil
			}
		}
		return fmt.Errorf("not one of %v", values)
	}
}

func nonEmpty(s string) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	return nil
}
