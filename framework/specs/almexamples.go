package specs

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/json" // numbers as int64 where integral, as unstructured objects expect

	"github.com/cleanup-e2e/cleanup-e2e/framework/bundle"
)

// AnnotationALMExamples is the CSV annotation holding sample CRs as a JSON array (operator-sdk
// generates it from config/samples).
const AnnotationALMExamples = "alm-examples"

// ALMExamples returns the sample CRs of the bundle's CSV (its alm-examples annotation) as
// OperandCleanupSpecInput.Samples: each call returns fresh copies, the namespaced ones in the given
// namespace, the cluster-scoped ones in none. The scope comes from the bundle's own CRDs, read once
// here, so it works while the spec tree is built, before any cluster exists; an example of a kind the
// bundle does not define is an error.
func ALMExamples(bundleDir string) (func(namespace string) []*unstructured.Unstructured, error) {
	b, err := bundle.Load(bundleDir)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("bundle %s: CSV %s: metadata.annotations[%s]", bundleDir, b.CSV.Name, AnnotationALMExamples)
	raw, ok := b.CSV.Annotations[AnnotationALMExamples]
	if !ok || raw == "" {
		return nil, fmt.Errorf("%s is missing: add the JSON array of sample CRs (operator-sdk generates it from config/samples), "+
			"or write OperandCleanupSpecInput.Samples yourself", where)
	}
	var examples []any
	if err := json.Unmarshal([]byte(raw), &examples); err != nil {
		return nil, fmt.Errorf("%s is not a JSON array of objects: %w", where, err)
	}
	if len(examples) == 0 {
		return nil, fmt.Errorf("%s is an empty array: the specs need at least one sample CR to clean up", where)
	}
	samples := make([]*unstructured.Unstructured, len(examples))
	namespaced := make([]bool, len(examples))
	for i, e := range examples {
		obj, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is %T, not an object", where, i, e)
		}
		samples[i] = &unstructured.Unstructured{Object: obj}
		if namespaced[i], err = exampleScope(b.CRDs, samples[i]); err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", where, i, err)
		}
	}
	return func(namespace string) []*unstructured.Unstructured {
		out := make([]*unstructured.Unstructured, len(samples))
		for i, s := range samples {
			out[i] = s.DeepCopy()
			out[i].SetNamespace("")
			if namespaced[i] {
				out[i].SetNamespace(namespace)
			}
		}
		return out
	}, nil
}

// MustALMExamples is ALMExamples for a package-level OperandCleanupSpecInput: it panics with the
// error, failing the suite while its tree is built.
func MustALMExamples(bundleDir string) func(namespace string) []*unstructured.Unstructured {
	samples, err := ALMExamples(bundleDir)
	if err != nil {
		panic(err)
	}
	return samples
}

// exampleScope reports whether the bundle's CRD for the example's kind and version is namespaced.
func exampleScope(crds []*apiextensionsv1.CustomResourceDefinition, example *unstructured.Unstructured) (bool, error) {
	gvk := example.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" || example.GetName() == "" {
		return false, fmt.Errorf("an example needs apiVersion, kind and metadata.name (got apiVersion %q, kind %q, name %q)",
			example.GetAPIVersion(), gvk.Kind, example.GetName())
	}
	for _, crd := range crds {
		if crd.Spec.Group != gvk.Group || crd.Spec.Names.Kind != gvk.Kind {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name == gvk.Version && v.Served {
				return crd.Spec.Scope == apiextensionsv1.NamespaceScoped, nil
			}
		}
		return false, fmt.Errorf("%s %s: CRD %s does not serve version %s", gvk.Kind, example.GetName(), crd.Name, gvk.Version)
	}
	return false, fmt.Errorf("%s %s (%s): no CRD of the bundle defines this kind, so its scope is unknown; "+
		"leave it out of alm-examples or write OperandCleanupSpecInput.Samples yourself", gvk.Kind, example.GetName(), gvk.GroupVersion())
}
