package envtest

import (
	"context"
	"testing"

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
