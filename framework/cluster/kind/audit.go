package kind

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster/nodes"

	"github.com/cleanup-e2e/cleanup-e2e/framework/auditlog"
)

// The API server's audit policy (auditlog.WritesPolicy) is mounted into the node from the work dir, and
// its log stays on the node, read with docker exec (cluster.AuditLogs): a user in the docker group
// reads it as well as root does.
const (
	nodeAuditDir    = "/etc/kubernetes/audit"
	nodeAuditLogDir = "/var/log/kubernetes/audit"
	nodeAuditLog    = nodeAuditLogDir + "/audit.log"
)

// auditPatches are kubeadm's: the API server's audit flags appended to the args kind sets, and the
// policy and log directories mounted into its static pod. A kept cluster serves run after run: the log
// is rotated at 256 MB, one old file kept.
var auditPatches = []kindv1alpha4.PatchJSON6902{{Group: "kubeadm.k8s.io", Version: "v1beta4", Kind: "ClusterConfiguration",
	Patch: `
- op: add
  path: /apiServer/extraArgs/-
  value: {name: audit-policy-file, value: ` + nodeAuditDir + `/policy.yaml}
- op: add
  path: /apiServer/extraArgs/-
  value: {name: audit-log-path, value: ` + nodeAuditLog + `}
- op: add
  path: /apiServer/extraArgs/-
  value: {name: audit-log-maxsize, value: "256"}
- op: add
  path: /apiServer/extraArgs/-
  value: {name: audit-log-maxbackup, value: "1"}
- op: add
  path: /apiServer/extraVolumes
  value:
  - {name: audit-policy, hostPath: ` + nodeAuditDir + `, mountPath: ` + nodeAuditDir + `, readOnly: true, pathType: Directory}
  - {name: audit-log, hostPath: ` + nodeAuditLogDir + `, mountPath: ` + nodeAuditLogDir + `, pathType: DirectoryOrCreate}
`}}

// auditMount writes the policy into the work dir and returns the node's mount of it.
func (p *Provider) auditMount() (kindv1alpha4.Mount, error) {
	dir := filepath.Join(p.workDir, "audit")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return kindv1alpha4.Mount{}, err
	}
	err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(auditlog.WritesPolicy), 0o644)
	return kindv1alpha4.Mount{HostPath: dir, ContainerPath: nodeAuditDir, Readonly: true}, err
}

// auditTail is how much of the audit log AuditLog reads: its last writes, tens of thousands of them,
// reach further back than the objects a spec judges.
const auditTail = 64 << 20

// AuditLog is the end of the API server's audit log, read from the control-plane node: who made each
// write (cluster.AuditLogs). Its first line may be cut.
func (p *Provider) AuditLog() ([]byte, error) {
	node, err := p.node()
	if err != nil {
		return nil, err
	}
	var out, stderr bytes.Buffer
	if err := node.Command("tail", "-c", fmt.Sprint(auditTail), nodeAuditLog).SetStdout(&out).SetStderr(&stderr).Run(); err != nil {
		return nil, fmt.Errorf("read %s on node %s (a cluster created before the providers kept an audit log has none: delete it): %w: %s",
			nodeAuditLog, node, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out.Bytes(), nil
}

// noAuditLog says why an existing cluster cannot be reused when it keeps no audit log ("" when it does):
// one created before the providers kept one.
func (p *Provider) noAuditLog() string {
	node, err := p.node()
	if err != nil {
		return err.Error()
	}
	if err := node.Command("test", "-f", nodeAuditLog).Run(); err != nil {
		return "its API server keeps no audit log (" + nodeAuditLog + ")"
	}
	return ""
}

// node is the cluster's one node.
func (p *Provider) node() (nodes.Node, error) {
	all, err := p.kind.ListNodes(p.opts.name)
	if err != nil || len(all) != 1 {
		return nil, fmt.Errorf("kind cluster %s: list its node (%d found): %v", p.opts.name, len(all), err)
	}
	return all[0], nil
}
