package e2eframework

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

// TestAloneWaitsForTheOtherRunsOnASharedCluster: on a shared cluster (the existing provider, here on
// an envtest control plane) Cluster.Alone — which the AllNamespaces features call — goes through the
// run lock: it waits while another run of the cluster is in its specs, ends with its context, and has
// the cluster alone once the other run finished.
func TestAloneWaitsForTheOtherRunsOnASharedCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	envtest.ForTest(ctx, t, envtest.WithName("e2efw-alone"), envtest.WithoutOLM()) // sets KUBECONFIG
	t.Setenv("CLEANUP_E2E_PROVIDER", "existing")
	// The run lock of an existing cluster lives in os.TempDir(), named after its API server: this one-off
	// cluster's would be left in /tmp after every make test (five empty files a run).
	t.Setenv("TMPDIR", t.TempDir())
	in := testenv.Config{Name: "alone", Log: testr.New(t)}
	mine, other := New(in), New(in)
	otherCfg, mineCfg := envconf.New(), envconf.New()
	if _, err := other.Setup(ctx, otherCfg); err != nil {
		t.Fatal(err)
	}
	if _, err := mine.Setup(ctx, mineCfg); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	if done, err := mine.Alone(short, "a feature of its own"); !errors.Is(err, context.DeadlineExceeded) {
		if done != nil {
			done()
		}
		t.Fatalf("Alone while another run is in its specs: want a wait cut short by its context, got %v", err)
	}
	if _, err := other.Finish(ctx, otherCfg); err != nil {
		t.Fatal(err)
	}
	done, err := mine.Alone(ctx, "a feature of its own")
	if err != nil {
		t.Fatalf("Alone once the other run finished: %v", err)
	}
	done()
	if _, err := mine.Finish(ctx, mineCfg); err != nil {
		t.Fatal(err)
	}
}
