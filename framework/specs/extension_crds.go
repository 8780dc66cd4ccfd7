package specs

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// liveCRD is the CRD named name, nil when there is none.
func liveCRD(ctx context.Context, c client.Client, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, crd)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read CRD %s: %w", name, err)
	}
	return crd, nil
}

// listCRs lists every custom resource of crd in every namespace (its storage version).
func listCRs(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) ([]unstructured.Unstructured, error) {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.ListKind})
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list the custom resources of CRD %s: %w", crd.Name, err)
	}
	return list.Items, nil
}

// deleteCRD deletes crd (this object, by UID) and waits until it is gone.
func deleteCRD(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	uid := crd.UID
	if err := client.IgnoreNotFound(c.Delete(ctx, crd, client.Preconditions{UID: &uid})); err != nil {
		return fmt.Errorf("delete CRD %s: %w", crd.Name, err)
	}
	return crdsGone(ctx, c, intervals.Gone, crd.Name)
}

// crdsGone waits (the named wait n) until none of the CRDs named exists.
func crdsGone(ctx context.Context, c client.Client, n intervals.Name, names ...string) error {
	return intervals.Wait(ctx, n, func() (bool, string) {
		for _, name := range names {
			crd, err := liveCRD(ctx, c, name)
			if err != nil {
				return false, err.Error()
			}
			if crd != nil {
				return false, fmt.Sprintf("CRD %s still there (%s; finalizers %v; conditions %v)", name, ownerState(crd), crd.Finalizers, crdConditions(crd))
			}
		}
		return true, ""
	})
}

func crdConditions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, c := range crd.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s %s", c.Type, c.Status, c.Reason))
	}
	return out
}

// WithoutRequiredAPIs writes a copy of the registry-v1 bundle in bundleDir whose CSV requires no CRD
// (spec.customresourcedefinitions.required dropped) and returns its directory, made once per bundle
// content in the user's cache directory. OLM v1 (v1.2.0) resolves no dependencies and refuses a bundle
// that declares one: this is the bundle of a team that installs the provider of those APIs first, for
// the OLM v1 cases. The OLM v0 cases want the bundle as published.
//
// The CSV keeps the dropped kinds in the annotation DroppedRequiredAPIsAnnotation: the operator still
// makes objects of them, so a spec on a shared cluster holds those APIs too.
func WithoutRequiredAPIs(bundleDir string) (string, error) {
	// The cache name changes whenever what the rewrite writes does: a variant cached by another
	// rewrite of the same bundle is never reused.
	return bundleVariant(bundleDir, "bundles-without-required-apis-annotated", func(data []byte) ([]byte, int, error) {
		return rewriteCSVs(data, func(csv map[string]any) error {
			required, _, err := unstructured.NestedSlice(csv, "spec", "customresourcedefinitions", "required")
			if err != nil {
				return err
			}
			var kinds []string
			for _, r := range required {
				m, _ := r.(map[string]any)
				name, _ := m["name"].(string)
				kind, _ := m["kind"].(string)
				if _, group, ok := strings.Cut(name, "."); ok && kind != "" {
					kinds = append(kinds, strings.ToLower(kind)+"."+group)
				}
			}
			if len(kinds) > 0 {
				annotations, _, _ := unstructured.NestedStringMap(csv, "metadata", "annotations")
				if annotations == nil {
					annotations = map[string]string{}
				}
				annotations[DroppedRequiredAPIsAnnotation] = strings.Join(kinds, ",")
				if err := unstructured.SetNestedStringMap(csv, annotations, "metadata", "annotations"); err != nil {
					return err
				}
			}
			unstructured.RemoveNestedField(csv, "spec", "customresourcedefinitions", "required")
			return nil
		})
	})
}

// DroppedRequiredAPIsAnnotation on the CSV of a WithoutRequiredAPIs variant lists the kinds it required
// (kind.group, lower case, comma-separated).
const DroppedRequiredAPIsAnnotation = "cleanup-e2e.io/dropped-required-apis"

// MustWithoutRequiredAPIs is WithoutRequiredAPIs for a spec input built at package level; it panics
// with the error.
func MustWithoutRequiredAPIs(bundleDir string) string {
	dir, err := WithoutRequiredAPIs(bundleDir)
	if err != nil {
		panic(err)
	}
	return dir
}
