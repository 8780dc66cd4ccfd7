package payload

import (
	"fmt"
	"strings"
)

// Resource identifies a cluster object in the CVO's messages: kind plus namespace/name.
type Resource struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String formats like the CVO: `deployment "ns/name"`, `namespace "name"` when cluster-scoped; the
// kind is lower-cased for the kinds the CVO deletes with typed clients and written as in the
// manifest for every other kind (its generic path), e.g. `Widget "ns/name"`.
func (r Resource) String() string {
	id := r.Name
	if r.Namespace != "" {
		id = r.Namespace + "/" + r.Name
	}
	kind := r.Kind
	if cvoTypedKinds[r.Group+"/"+r.Kind] {
		kind = strings.ToLower(kind)
	}
	return fmt.Sprintf(`%s "%s"`, kind, id) // plain quotes, as the CVO's Resource.String (lib/resourcedelete/helper.go)
}

// cvoTypedKinds are group/kind of the typed builders the CVO registers (lib/resourcebuilder
// resourcebuilder.go init), whose deletes (lib/resourcedelete) name the kind in lower case.
var cvoTypedKinds = map[string]bool{
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration": true,
	"apiextensions.k8s.io/CustomResourceDefinition":               true,
	"apps/DaemonSet":                        true,
	"apps/Deployment":                       true,
	"batch/CronJob":                         true,
	"batch/Job":                             true,
	"/ConfigMap":                            true,
	"/Namespace":                            true,
	"/Service":                              true,
	"/ServiceAccount":                       true,
	"image.openshift.io/ImageStream":        true,
	"operators.coreos.com/OperatorGroup":    true,
	"rbac.authorization.k8s.io/ClusterRole": true,
	"rbac.authorization.k8s.io/ClusterRoleBinding":     true,
	"rbac.authorization.k8s.io/Role":                   true,
	"rbac.authorization.k8s.io/RoleBinding":            true,
	"security.openshift.io/SecurityContextConstraints": true,
}

// Key identifies the object regardless of version: group, kind, namespace, name.
func (r Resource) Key() string {
	return strings.Join([]string{r.Group, r.Kind, r.Namespace, r.Name}, "/")
}
