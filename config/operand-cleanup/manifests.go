// Package operandcleanupconfig embeds the manifests that install the operand-cleanup controller
// (Namespace, ServiceAccount, least-privilege ClusterRole/Binding, leader-election Role, Deployment) so the
// framework can apply them. Files are applied in name order.
package operandcleanupconfig

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Names used by the manifests.
const (
	Namespace          = "operand-cleanup"
	ServiceAccount     = "operand-cleanup"
	ClusterRole        = "operand-cleanup"
	ClusterRoleBinding = "operand-cleanup"
	Deployment         = "operand-cleanup"
	Image              = "cleanup-e2e.local/operand-cleanup:v0.1.0"
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
func Objects() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, name := range Files() {
		data, err := FS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if err == io.EOF {
					break
				}
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			out = append(out, u)
		}
	}
	return out, nil
}
