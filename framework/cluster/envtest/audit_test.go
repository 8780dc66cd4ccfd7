package envtest

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// TestAuditLogSaysWhoMadeTheRequests: with CLEANUP_E2E_AUDIT_DIR set, the API server's audit log names
// the client, verb and object of every request, and outlives the provider. It also shows that the
// control plane started from the etcd seed.
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
	if cfg.BearerToken == "" || len(cfg.CertData) > 0 {
		t.Errorf("the provider's clients should authenticate with the token of toolchain.StartEnvtest, not a client certificate (token set: %t, certificate set: %t)", cfg.BearerToken != "", len(cfg.CertData) > 0)
	}
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
	// Started from the seed (seed.go), the API server finds RBAC's bootstrap roles and creates none.
	if envvar.EnvtestSeed.Get() != "0" {
		if n := createdClusterRoles(t, data); n > 0 {
			t.Errorf("the API server created %d ClusterRoles at its start: it did not start from the etcd seed (see the provider's log)", n)
		}
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"userAgent":"audit-probe/v0"`) && strings.Contains(line, `"verb":"create"`) &&
			strings.Contains(line, `"name":"audited"`) && strings.Contains(line, `"stage":"ResponseComplete"`) {
			if !strings.Contains(line, `"username":"`+toolchain.AdminUser+`"`) {
				t.Fatalf("the probe's request did not authenticate as %s (the token of toolchain.StartEnvtest): %s", toolchain.AdminUser, line)
			}
			return
		}
	}
	t.Fatalf("the audit log has no line for the probe's create of ConfigMap default/audited (%d bytes)", len(data))
}

// createdClusterRoles counts the API server's own creates of ClusterRoles in an audit log.
func createdClusterRoles(t *testing.T, log []byte) int {
	n := 0
	for _, line := range bytes.Split(log, []byte("\n")) {
		var e struct {
			Verb      string `json:"verb"`
			Stage     string `json:"stage"`
			User      struct{ Username string }
			ObjectRef struct{ Resource string } `json:"objectRef"`
		}
		if len(line) == 0 {
			continue
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("audit log line %q: %v", line, err)
		}
		if e.Verb == "create" && e.Stage == "ResponseComplete" && e.User.Username == "system:apiserver" && e.ObjectRef.Resource == "clusterroles" {
			n++
		}
	}
	return n
}
