package olm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// crashCause is what widget-operator v0.1.0 says when it exits at once in TestOnACluster.
const crashCause = "open /tmp/k8s-webhook-server/serving-certs/tls.crt: no such file or directory"

// The tests that need a control plane share one, with OLM and a widget-operator that exits at once:
// a start costs ≈ 2-3 s of CPU, and make test is CPU-bound. They touch disjoint namespaces.
func TestOnACluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SuiteSetup)) // it starts a provider: a backstop above its start's own timeouts
	defer cancel()
	crash := func(context.Context, *rest.Config, []string, func(string) string) error {
		return errors.New(crashCause)
	}
	registry := localruntime.NewRegistry(map[string]localruntime.Entrypoint{"fixtures.local/widget-operator:v0.1.0": crash})
	_, c := envtest.ForTest(ctx, t, envtest.WithName("olm-tests"), envtest.WithRegistry(registry))
	t.Run("EnsureNamespaces waits out a terminating namespace", func(t *testing.T) {
		testEnsureNamespacesWaitsOutATerminatingNamespace(ctx, t, c)
	})
	t.Run("a crash-looping operator fails the install naming its last error", func(t *testing.T) {
		testACrashLoopingOperatorFailsTheInstallNamingItsLastError(ctx, t, c)
	})
	t.Run("the OLM probe leaves no ClusterRoles", func(t *testing.T) {
		testTheOLMProbeLeavesNoClusterRoles(ctx, t, c)
	})
}

// An operator that exits at once (a scaffolded operator whose webhook certificate is missing) never
// makes the install succeed, and the install's error says that it exits and why: the spec's failure
// message names the crash, not a timeout at an unrelated step. The wait stops at its third exit, in
// seconds, not at the install's timeout.
func testACrashLoopingOperatorFailsTheInstallNamingItsLastError(ctx context.Context, t *testing.T, c client.Client) {
	if err := olm.EnsureNamespaces(ctx, c, "crashing"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := olm.InstallBundle(ctx, olm.InstallBundleInput{Client: c, BundleDir: bundles.Dir("widget-operator", "v0.1.0"),
		Namespace: "crashing", InstallMode: operatorsv1alpha1.InstallModeTypeOwnNamespace, Timeout: intervals.Get(intervals.CSVSucceeded)})
	if err == nil {
		t.Fatal("a crash-looping operator was installed")
	}
	if took := time.Since(start); took > intervals.Scaled(30*time.Second) {
		t.Errorf("the install took %s to give up on an operator that exits at once", took)
	}
	for _, want := range []string{"crash-looping", "deployment crashing/widget-operator: operator exited", crashCause} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the install error lacks %q:\n%v", want, err)
		}
	}
}
