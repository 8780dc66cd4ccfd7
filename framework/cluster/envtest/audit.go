package envtest

import (
	"fmt"
	"os"
	"path/filepath"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

// auditPolicy records who made each request, its verb, object and answer, once it completed; the
// bodies of writes to the kinds an uninstall releases to the garbage collector too (level Request),
// so the log says who changed an object's owner references, and how.
const auditPolicy = `apiVersion: audit.k8s.io/v1
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

// audit makes the API server write its audit log to $CLEANUP_E2E_AUDIT_DIR/<cluster>.log, outside the
// work dir so it outlives the run: it says which client makes the requests that keep an API server
// busy, and who wrote what to an object an uninstall left behind.
func (p *Provider) audit(api *crenvtest.APIServer) error {
	dir := p.opts.auditDir
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", envvar.AuditDir.Name, err)
	}
	policy := filepath.Join(p.workDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return err
	}
	abs, err := filepath.Abs(filepath.Join(dir, p.opts.name+".log"))
	if err != nil {
		return err
	}
	api.Configure().Set("audit-policy-file", policy).Set("audit-log-path", abs)
	p.opts.log.Info("API server audit log", "path", abs)
	return nil
}
