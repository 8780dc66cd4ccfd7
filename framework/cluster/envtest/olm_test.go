package envtest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// A stopped OLM must fail the readiness check (the old probe kept passing on the status OLM wrote once),
// and StartOLM must bring back an OLM that reconciles. Started from the etcd seed, which holds OLM's
// CRDs, the provider serves them without writing them again.
func TestStopAndStartOLM(t *testing.T) {
	t.Parallel() // each starts its own control plane in its own work root
	ctx := context.Background()
	seeded := envvar.EnvtestSeed.Get() != "0"
	if seeded {
		crds, err := olm.CRDs()
		must(t, err)
		wctx, cancel := context.WithTimeout(ctx, intervals.Get(intervals.SuiteSetup))
		waitForSeed(wctx, t, crds)
		cancel()
	}
	auditDir := t.TempDir()
	// not ForTest: it sets KUBECONFIG, which a parallel test may not
	p, c := ForParallelTest(ctx, t, WithName("olm-stop-start"), func(o *options) { o.auditDir = auditDir })
	if ok, err := olm.Reconciling(ctx, c); !ok || err != nil {
		t.Fatalf("OLM just started: reconciling=%t, err=%v", ok, err)
	}
	if seeded {
		data, err := os.ReadFile(filepath.Join(auditDir, "olm-stop-start.log"))
		must(t, err)
		writes := countRequests(t, data, func(e auditEvent) bool {
			return e.ObjectRef.Resource == "customresourcedefinitions" && !slices.Contains([]string{"get", "list", "watch"}, e.Verb)
		})
		if writes > 0 {
			t.Errorf("the start wrote CRDs %d times (the audit log in %s): the etcd seed holds OLM's, and each write of one back unchanged costs the API server a validation of its schema", writes, auditDir)
		}
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
	t.Run("from a connected process", func(t *testing.T) { checkConnected(ctx, t, p, c) })
}

// checkConnected: another process (a parallel Ginkgo process) connects to p's cluster with Connect. It
// uses the cluster and collects its logs, cannot stop OLM (p's process runs it), and its Stop leaves the
// cluster running.
func checkConnected(ctx context.Context, t *testing.T, p *Provider, c client.Client) {
	if _, err := Connect(filepath.Join(t.TempDir(), "kubeconfig")); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("Connect to a missing kubeconfig: want an error naming it, got %v", err)
	}
	other, err := Connect(p.KubeconfigPath(), WithName("other-process"))
	if err != nil {
		t.Fatal(err)
	}
	if other.Kind() != "envtest" || other.WebhooksUnsupported() == "" {
		t.Errorf("a connected provider must say what the cluster is: kind %q, webhooks unsupported %q", other.Kind(), other.WebhooksUnsupported())
	}
	oc, err := kube.NewClient(other.RESTConfig(), kube.MustScheme())
	if err != nil {
		t.Fatal(err)
	}
	if err := oc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "from-other-process"}}); err != nil {
		t.Errorf("the connected process must use the same cluster: %v", err)
	}
	if err := other.StopOLM(ctx); err == nil || !strings.Contains(err.Error(), p.WorkDir()) || !strings.Contains(err.Error(), "Serial") {
		t.Errorf("StopOLM from a connected process: want an error naming the cluster's work dir and what to do, got %v", err)
	}
	dir := t.TempDir()
	if err := other.CollectArtifacts(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver.log")); err != nil {
		t.Errorf("a connected process must collect the cluster's logs: %v", err)
	}
	if err := other.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "from-other-process"}, &corev1.Namespace{}); err != nil {
		t.Errorf("the connected process's Stop must leave the cluster running: %v", err)
	}
	if ok, err := olm.Reconciling(ctx, c); !ok || err != nil {
		t.Errorf("the connected process's Stop must leave OLM running: reconciling=%t, err=%v", ok, err)
	}
}
