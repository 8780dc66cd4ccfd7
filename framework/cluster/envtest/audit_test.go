package envtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

// TestAuditLogSaysWhoMadeTheRequests: with CLEANUP_E2E_AUDIT_DIR set, the API server's audit log names
// the client, verb and object of every request, and outlives the provider.
func TestAuditLogSaysWhoMadeTheRequests(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envvar.AuditDir.Name, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := New(ctx, WithName("audit"), WithoutOLM(), WithWorkRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(p.RESTConfig())
	cfg.UserAgent = "audit-probe/v0"
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "audited"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatalf("no audit log where %s points: %v", envvar.AuditDir.Name, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"userAgent":"audit-probe/v0"`) && strings.Contains(line, `"verb":"create"`) &&
			strings.Contains(line, `"name":"audited"`) && strings.Contains(line, `"stage":"ResponseComplete"`) {
			return
		}
	}
	t.Fatalf("the audit log has no line for the probe's create of ConfigMap default/audited (%d bytes)", len(data))
}
