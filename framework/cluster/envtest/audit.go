package envtest

import (
	"fmt"
	"os"
	"path/filepath"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cleanup-e2e/cleanup-e2e/framework/auditlog"
	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

// everythingPolicy, with $CLEANUP_E2E_AUDIT_DIR, records every request too, and the bodies of writes to
// the kinds an uninstall releases to the garbage collector (level Request): which client keeps an API
// server busy, who changed an object's owner references, and how.
const everythingPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Request
  verbs: ["patch", "update", "create", "delete"]
  resources:
  - group: ""
    resources: ["serviceaccounts"]
  - group: apps
    resources: ["deployments"]
  - group: apiextensions.k8s.io
    resources: ["customresourcedefinitions"]
  - group: rbac.authorization.k8s.io
    resources: ["clusterroles", "clusterrolebindings"]
- level: Metadata
`

// auditLogPath is where the API server writes its audit log: $CLEANUP_E2E_AUDIT_DIR/<cluster>.log,
// outside the work dir so that it outlives the run, else the work dir's logs (copied with the
// artifacts). A provider made by Connect computes the same path.
func (p *Provider) auditLogPath() (string, error) {
	if p.opts.auditDir == "" {
		return filepath.Join(p.workDir, "logs", "audit.log"), nil
	}
	return filepath.Abs(filepath.Join(p.opts.auditDir, p.opts.name+".log"))
}

// audit makes the API server write its audit log.
func (p *Provider) audit(api *crenvtest.APIServer) error {
	path, err := p.auditLogPath()
	if err != nil {
		return err
	}
	policy := auditlog.WritesPolicy
	if p.opts.auditDir != "" {
		policy = everythingPolicy
		if err := os.MkdirAll(p.opts.auditDir, 0o755); err != nil {
			return fmt.Errorf("%s: %w", envvar.AuditDir.Name, err)
		}
		p.opts.log.Info("API server audit log", "path", path)
	}
	file := filepath.Join(p.workDir, "audit-policy.yaml")
	if err := os.WriteFile(file, []byte(policy), 0o644); err != nil {
		return err
	}
	api.Configure().Set("audit-policy-file", file).Set("audit-log-path", path)
	return nil
}

// AuditLog is the API server's audit log: at least who made each write (cluster.AuditLogs).
func (p *Provider) AuditLog() ([]byte, error) {
	path, err := p.auditLogPath()
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}
