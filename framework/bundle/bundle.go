// Package bundle reads an OLM registry-v1 bundle (manifests/ and metadata/annotations.yaml) from disk:
// its CSV, the CRDs it ships and every other manifest, which framework/olm installs as OLM's InstallPlan
// would and the spec library reads its install modes, samples and APIs from. Your operator's bundle
// dir (e.g. "../../bundle") is what the spec inputs take; this package is for cases of your own.
package bundle

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Bundle annotation keys (metadata/annotations.yaml).
const (
	AnnotationPackage        = "operators.operatorframework.io.bundle.package.v1"
	AnnotationChannels       = "operators.operatorframework.io.bundle.channels.v1"
	AnnotationDefaultChannel = "operators.operatorframework.io.bundle.channel.default.v1"
)

// Bundle is a registry-v1 bundle read from disk.
type Bundle struct {
	// Dir is the bundle's directory.
	Dir string
	// Annotations are metadata/annotations.yaml.
	Annotations map[string]string
	// CSV is the ClusterServiceVersion.
	CSV *operatorsv1alpha1.ClusterServiceVersion
	// CRDs are the CustomResourceDefinitions the bundle ships, in file order.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Others are every other manifest (Services, ConfigMaps, RBAC, ServiceMonitors, ...); framework/olm
	// installs them as OLM's InstallPlan does (olm.InstallCSVInput.Objects).
	Others []*unstructured.Unstructured
}

// Package is the bundle's OLM package name.
func (b *Bundle) Package() string { return b.Annotations[AnnotationPackage] }

// DefaultChannel is the channel the bundle's package defaults to.
func (b *Bundle) DefaultChannel() string { return b.Annotations[AnnotationDefaultChannel] }

// Channels are the channels the bundle is published in.
func (b *Bundle) Channels() []string {
	if v := b.Annotations[AnnotationChannels]; v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

// Load reads the bundle in dir: metadata/annotations.yaml and every manifest in manifests/ (YAML or
// JSON, several documents per file allowed). It fails unless there is exactly one CSV.
func Load(dir string) (*Bundle, error) {
	b := &Bundle{Dir: dir}
	annotations := struct {
		Annotations map[string]string `json:"annotations"`
	}{}
	data, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	if err := yaml.Unmarshal(data, &annotations); err != nil {
		return nil, fmt.Errorf("bundle %s: metadata/annotations.yaml: %w", dir, err)
	}
	b.Annotations = annotations.Annotations

	entries, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := b.addManifests(filepath.Join(dir, "manifests", e.Name())); err != nil {
			return nil, fmt.Errorf("bundle %s: %w", dir, err)
		}
	}
	if b.CSV == nil {
		return nil, fmt.Errorf("bundle %s: no ClusterServiceVersion in manifests/", dir)
	}
	return b, nil
}

func (b *Bundle) addManifests(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		if len(obj.Object) == 0 {
			continue // an empty document, e.g. a leading "---"
		}
		if err := b.add(doc, obj); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
	}
}

func (b *Bundle) add(doc []byte, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	switch {
	case gvk == operatorsv1alpha1.SchemeGroupVersion.WithKind(operatorsv1alpha1.ClusterServiceVersionKind):
		if b.CSV != nil {
			return fmt.Errorf("second ClusterServiceVersion %s (first: %s)", obj.GetName(), b.CSV.Name)
		}
		b.CSV = &operatorsv1alpha1.ClusterServiceVersion{}
		return yaml.Unmarshal(doc, b.CSV)
	case gvk == apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"):
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, crd); err != nil {
			return err
		}
		b.CRDs = append(b.CRDs, crd)
	default:
		b.Others = append(b.Others, obj)
	}
	return nil
}
