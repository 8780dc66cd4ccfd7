package payload

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Manifest is one document of one payload file.
type Manifest struct {
	// Filename is the file's base name, e.g. "0000_50_foo_01_deployment.yaml".
	Filename string
	// Index is the document's 0-based position in the file (empty documents count too).
	Index int
	// Raw is the document as JSON.
	Raw []byte
	// Obj is the decoded object.
	Obj *unstructured.Unstructured
}

// GVK is the manifest's group/version/kind.
func (m *Manifest) GVK() schema.GroupVersionKind { return m.Obj.GroupVersionKind() }

// Ref names the manifest in messages: "<file>[<index>]".
func (m *Manifest) Ref() string { return fmt.Sprintf("%s[%d]", m.Filename, m.Index) }

// String is Ref plus the object: `0000_10_a_x.yaml[0] (ConfigMap ns/name)`.
func (m *Manifest) String() string {
	id := m.Obj.GetName()
	if ns := m.Obj.GetNamespace(); ns != "" {
		id = ns + "/" + id
	}
	return fmt.Sprintf("%s (%s %s)", m.Ref(), m.Obj.GetKind(), id)
}

// IsClusterOperator reports whether the manifest is a config.openshift.io ClusterOperator.
func (m *Manifest) IsClusterOperator() bool {
	gvk := m.GVK()
	return gvk.Group == "config.openshift.io" && gvk.Kind == "ClusterOperator"
}
