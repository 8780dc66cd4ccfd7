package toolchain

import (
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
)

// CRDServedDeadline is how long a started control plane may take to serve the CRDs it installs:
// envtest's 10 s default is a starved API server's whole start under contention (seen with the
// benchmarks at nice 19 beside stress-ng). A deadline, not a wait.
const CRDServedDeadline = time.Minute

// StartEnvtest starts envtest's control plane (etcd, kube-apiserver, e's CRDs) from EnvtestAssets
// unless e names its own binaries, with CRDServedDeadline unless e sets one. When Start fails it stops
// what it started: envtest leaves etcd and kube-apiserver running when a later step (installing the
// CRDs) fails, and an orphaned pair was once found 20 minutes after its run. The config it returns
// authenticates as AdminUser with a bearer token (token.go), not with envtest's client certificate.
func StartEnvtest(e *crenvtest.Environment) (*rest.Config, error) {
	if e.BinaryAssetsDirectory == "" {
		assets, err := EnvtestAssets()
		if err != nil {
			return nil, err
		}
		e.BinaryAssetsDirectory = assets
	}
	// envtest's default, 20 s, is too short for a control plane started under load: with most test
	// binaries niced (make test's TEST_FOREGROUND), a fixtures test's API server failed 5 starts in a
	// row while 16 test binaries were linked (2026-11-26).
	if e.ControlPlaneStartTimeout == 0 {
		e.ControlPlaneStartTimeout = 2 * time.Minute
	}
	if e.CRDInstallOptions.MaxTime == 0 {
		e.CRDInstallOptions.MaxTime = CRDServedDeadline
	}
	token, remove, err := adminToken(e)
	if err != nil {
		return nil, fmt.Errorf("writing the API server's token file: %w", err)
	}
	defer remove()
	cfg, err := e.Start()
	if err != nil {
		if stopErr := e.Stop(); stopErr != nil {
			return nil, fmt.Errorf("%w (stopping what it started: %v)", err, stopErr)
		}
		return nil, err
	}
	return withToken(cfg, token), nil
}
