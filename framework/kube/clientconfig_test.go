package kube

import (
	"testing"

	"k8s.io/client-go/rest"
)

func TestClientConfigLiftsOnlyUnsetRateLimits(t *testing.T) {
	t.Parallel()
	kind := &rest.Config{Host: "https://127.0.0.1:6443"} // as a kind kubeconfig loads: no limits
	if got := ClientConfig(kind); got.QPS != 50 || got.Burst != 100 {
		t.Errorf("unset limits: got QPS %v burst %d, want 50 and 100", got.QPS, got.Burst)
	}
	if kind.QPS != 0 {
		t.Errorf("the caller's config was changed: QPS %v", kind.QPS)
	}
	slow := &rest.Config{QPS: 0.15, Burst: 1}
	if got := ClientConfig(slow); got.QPS != 0.15 || got.Burst != 1 {
		t.Errorf("a limit the caller set must stay: got QPS %v burst %d", got.QPS, got.Burst)
	}
}
