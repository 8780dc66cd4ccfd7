package envtest

import (
	"context"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// A stopped OLM must fail the readiness check (the old probe kept passing on the status OLM wrote once),
// and StartOLM must bring back an OLM that reconciles.
func TestStopAndStartOLM(t *testing.T) {
	ctx := context.Background()
	p, c := ForTest(ctx, t)
	if ok, err := olm.Reconciling(ctx, c); !ok || err != nil {
		t.Fatalf("OLM just started: reconciling=%t, err=%v", ok, err)
	}
	// A client whose rate limiter makes a read wait longer than the probe window (as a loaded machine's
	// did): the check must wait for OLM's answer, not report the limiter's refusal as an error.
	slowCfg := rest.CopyConfig(p.RESTConfig())
	slowCfg.QPS, slowCfg.Burst = 0.15, 1 // one read per 6.7 s: longer than the 5 s window
	slow, err := kube.NewClient(slowCfg, kube.MustScheme())
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := olm.Reconciling(ctx, slow); !ok || err != nil {
		t.Fatalf("OLM running, reads rate-limited: reconciling=%t, err=%v", ok, err)
	}
	if err := p.StopOLM(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := olm.Reconciling(ctx, c); ok || err != nil {
		t.Fatalf("OLM stopped: the check must say it does not reconcile, got reconciling=%t, err=%v", ok, err)
	}
	if err := p.StopOLM(ctx); err == nil {
		t.Fatal("stopping a stopped OLM must be an error")
	}
	if err := p.StartOLM(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := olm.Reconciling(ctx, c); !ok || err != nil {
		t.Fatalf("OLM restarted: reconciling=%t, err=%v", ok, err)
	}
}
