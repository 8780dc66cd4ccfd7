package payload

import (
	"fmt"
	"strings"
)

// Resource identifies a cluster object in the CVO's messages: lower-case kind plus namespace/name.
type Resource struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String formats like the CVO: `deployment "ns/name"`, or `namespace "name"` when cluster-scoped.
func (r Resource) String() string {
	id := r.Name
	if r.Namespace != "" {
		id = r.Namespace + "/" + r.Name
	}
	return fmt.Sprintf("%s %q", strings.ToLower(r.Kind), id)
}

// Key identifies the object regardless of version: group, kind, namespace, name.
func (r Resource) Key() string {
	return strings.Join([]string{r.Group, r.Kind, r.Namespace, r.Name}, "/")
}
