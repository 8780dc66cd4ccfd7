// Package payloadtest writes sample payloads for tests: a Builder collecting files of objects (typed,
// unstructured, maps or raw YAML) plus the release-metadata file, and small object constructors.
//
//	dir := payloadtest.New("1.0.0").
//		File("0000_10_widgets_00_crd.yaml", payloadtest.CRD("example.com", "Widget", "widgets", true)).
//		File("0000_20_app_00_ns.yaml", payloadtest.Namespace("app")).
//		File("0000_20_app_01_cm.yaml", payloadtest.Delete(payloadtest.ConfigMap("app", "old", nil))).
//		MustWrite(t.TempDir())
package payloadtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
)

// Builder collects payload files.
type Builder struct {
	version string
	files   map[string][]byte
	err     error
}

// New starts a payload with the given release version ("" writes no release-metadata).
func New(version string) *Builder {
	return &Builder{version: version, files: map[string][]byte{}}
}

// Version changes the release version.
func (b *Builder) Version(v string) *Builder { b.version = v; return b }

// File adds (or replaces) a file made of the given documents, each a runtime.Object (typed or
// unstructured), a map, a string or []byte (raw YAML/JSON, written as is). Names ending in .json get
// a single JSON document; others get YAML documents separated by "---".
func (b *Builder) File(name string, docs ...interface{}) *Builder {
	if b.err != nil {
		return b
	}
	var parts []string
	for i, d := range docs {
		s, err := render(d, strings.HasSuffix(name, ".json"))
		if err != nil {
			b.err = fmt.Errorf("%s: document %d: %w", name, i, err)
			return b
		}
		parts = append(parts, s)
	}
	b.files[name] = []byte(strings.Join(parts, "\n---\n"))
	return b
}

// Raw adds a file with exactly this content (e.g. a broken document or a non-manifest file).
func (b *Builder) Raw(name, content string) *Builder {
	b.files[name] = []byte(content)
	return b
}

// Remove drops a file.
func (b *Builder) Remove(name string) *Builder { delete(b.files, name); return b }

// Clone copies the builder (to derive the next version of a payload).
func (b *Builder) Clone() *Builder {
	c := &Builder{version: b.version, files: map[string][]byte{}, err: b.err}
	for k, v := range b.files {
		c.files[k] = append([]byte(nil), v...)
	}
	return c
}

// Files returns the file contents including release-metadata (e.g. for a ConfigMap payload).
func (b *Builder) Files() (map[string][]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	out := map[string][]byte{}
	for k, v := range b.files {
		out[k] = v
	}
	if b.version != "" {
		md, _ := json.Marshal(payload.ReleaseMetadata{Kind: payload.ReleaseMetadataKind, Version: b.version})
		out[payload.ReleaseMetadataFile] = md
	}
	return out, nil
}

// Names returns the file names, sorted.
func (b *Builder) Names() []string {
	var out []string
	for k := range b.files {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Write writes the payload into dir (created if needed; files of earlier writes are removed) and
// returns dir.
func (b *Builder) Write(dir string) (string, error) {
	files, err := b.Files()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	old, _ := os.ReadDir(dir)
	for _, e := range old {
		if !e.IsDir() {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// MustWrite is Write that panics on error (use inside tests with t.TempDir() or GinkgoT().TempDir()).
func (b *Builder) MustWrite(dir string) string {
	d, err := b.Write(dir)
	if err != nil {
		panic(err)
	}
	return d
}

// Load writes nothing and loads the payload straight from memory.
func (b *Builder) Load() (*payload.Payload, error) {
	files, err := b.Files()
	if err != nil {
		return nil, err
	}
	return payload.LoadFiles(files)
}

// MustLoad is Load that panics on error.
func (b *Builder) MustLoad() *payload.Payload {
	p, err := b.Load()
	if err != nil {
		panic(err)
	}
	return p
}

func render(d interface{}, asJSON bool) (string, error) {
	switch v := d.(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	case runtime.Object, map[string]interface{}:
		js, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		if asJSON {
			return string(js), nil
		}
		y, err := yaml.JSONToYAML(js)
		return string(y), err
	}
	return "", fmt.Errorf("unsupported document type %T", d)
}

// Object returns an unstructured object of any kind.
func Object(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// Namespace returns a v1 Namespace.
func Namespace(name string) *unstructured.Unstructured { return Object("v1", "Namespace", "", name) }

// ConfigMap returns a v1 ConfigMap with data.
func ConfigMap(namespace, name string, data map[string]string) *unstructured.Unstructured {
	u := Object("v1", "ConfigMap", namespace, name)
	if len(data) > 0 {
		_ = unstructured.SetNestedStringMap(u.Object, data, "data")
	}
	return u
}

// ClusterOperator returns a config.openshift.io/v1 ClusterOperator manifest expecting the given
// name/version pairs (e.g. "operator", "1.0.0"); with no pairs it declares no versions.
func ClusterOperator(name string, nameVersionPairs ...string) *unstructured.Unstructured {
	u := Object("config.openshift.io/v1", "ClusterOperator", "", name)
	u.Object["spec"] = map[string]interface{}{}
	var versions []interface{}
	for i := 0; i+1 < len(nameVersionPairs); i += 2 {
		versions = append(versions, map[string]interface{}{"name": nameVersionPairs[i], "version": nameVersionPairs[i+1]})
	}
	if len(versions) > 0 {
		u.Object["status"] = map[string]interface{}{"versions": versions}
	}
	return u
}

// CRD returns a v1 CustomResourceDefinition for group/kind (plural given) with one served version
// "v1", a status subresource and an open schema.
func CRD(group, kind, plural string, namespaced bool) *unstructured.Unstructured {
	scope := "Cluster"
	if namespaced {
		scope = "Namespaced"
	}
	u := Object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", plural+"."+group)
	u.Object["spec"] = map[string]interface{}{
		"group": group,
		"scope": scope,
		"names": map[string]interface{}{
			"kind":     kind,
			"listKind": kind + "List",
			"plural":   plural,
			"singular": strings.ToLower(kind),
		},
		"versions": []interface{}{map[string]interface{}{
			"name": "v1", "served": true, "storage": true,
			"subresources": map[string]interface{}{"status": map[string]interface{}{}},
			"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{
				"type": "object", "x-kubernetes-preserve-unknown-fields": true,
			}},
		}},
	}
	return u
}

// Annotate sets an annotation and returns obj.
func Annotate(obj *unstructured.Unstructured, key, value string) *unstructured.Unstructured {
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[key] = value
	obj.SetAnnotations(ann)
	return obj
}

// Delete marks obj with release.openshift.io/delete: "true".
func Delete(obj *unstructured.Unstructured) *unstructured.Unstructured {
	return Annotate(obj, payload.DeleteAnnotation, "true")
}

// DeleteValue marks obj with the delete annotation set to value (invalid unless "true").
func DeleteValue(obj *unstructured.Unstructured, value string) *unstructured.Unstructured {
	return Annotate(obj, payload.DeleteAnnotation, value)
}

// WithFinalizers adds finalizers and returns obj.
func WithFinalizers(obj *unstructured.Unstructured, finalizers ...string) *unstructured.Unstructured {
	obj.SetFinalizers(append(obj.GetFinalizers(), finalizers...))
	return obj
}
