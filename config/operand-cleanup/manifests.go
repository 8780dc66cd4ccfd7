// Package operandcleanupconfig embeds the manifests that install the operand-cleanup controller
// (Namespace, ServiceAccount, least-privilege ClusterRole/Binding, leader-election Role, Deployment, and
// guards, each a ValidatingAdmissionPolicy and its binding: OLM v1's orphan guard, and the unarmed guards
// of OLM v1's ClusterExtensions and OLM v0's CSVs) so the framework can apply them. Files are applied in
// name order.
package operandcleanupconfig

import (
	"embed"
	"io/fs"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/manifests"
)

// Names used by the manifests.
const (
	Namespace          = "operand-cleanup"
	ServiceAccount     = "operand-cleanup"
	ClusterRole        = "operand-cleanup"
	ClusterRoleBinding = "operand-cleanup"
	Deployment         = "operand-cleanup"
	Image              = "cleanup-e2e.local/operand-cleanup:v0.1.0"
	// OrphanGuard names the ValidatingAdmissionPolicy and its binding (extensioncleanup.OrphanGuardName).
	OrphanGuard = "orphaned-crds.cleanup-e2e.io"
	// ServiceAccountUser is the user name the controller authenticates as (for impersonation).
	ServiceAccountUser = "system:serviceaccount:" + Namespace + ":" + ServiceAccount
)

//go:embed *.yaml
var FS embed.FS

// Files returns the manifest file names in apply order.
func Files() []string {
	names, _ := fs.Glob(FS, "*.yaml")
	sort.Strings(names)
	return names
}

// Objects decodes every document of every manifest, in apply order.
func Objects() ([]*unstructured.Unstructured, error) { return manifests.DecodeFS(FS, "*.yaml") }

// Named returns the objects of the manifests named name, in apply order: for a guard, its
// ValidatingAdmissionPolicy and then its binding.
func Named(name string) ([]*unstructured.Unstructured, error) {
	objs, err := Objects()
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetName() == name {
			out = append(out, o)
		}
	}
	return out, nil
}
