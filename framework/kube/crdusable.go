package kube

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// WaitCRDsUsable waits until each named CRD is Established with its names accepted AND c's RESTMapper
// maps the kind of every served version. Established alone is not enough: the apiserver publishes a
// new group version in discovery a moment after it, and a client that looks its kind up in between
// gets `no matches for kind "X" in version "g/v"`.
//
// controller-runtime's default (dynamic) mapper asks discovery again on every miss, so polling it is
// enough; a mapper that caches misses (meta.ResettableRESTMapper, e.g. client-go's deferred discovery
// mapper) is Reset after each miss. Once c maps a kind the apiserver serves it in discovery, so other
// clients with controller-runtime's mapper see it too; pass a client whose mapper caches misses here
// itself. Every framework path that creates CRDs (ApplyCRDs, EnsureCRDs, the providers, OLM's
// install) ends with this wait; a consumer's suite that creates CRDs itself should call it too.
func WaitCRDsUsable(ctx context.Context, c client.Client, names ...string) error {
	for _, name := range names {
		if err := intervals.Wait(ctx, intervals.CRDUsable, func() (bool, string) { return crdUsable(ctx, c, name) }); err != nil {
			return fmt.Errorf("CRD %s is not usable by the client: %w", name, err)
		}
	}
	return nil
}

// crdUsable reads the CRD live and tries c's mapper on each served version, resetting it on a miss.
func crdUsable(ctx context.Context, c client.Client, name string) (bool, string) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return false, fmt.Sprintf("get CRD %s: %v", name, err)
	}
	for _, cond := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.NamesAccepted, apiextensionsv1.Established} {
		if !apihelpers.IsCRDConditionTrue(crd, cond) {
			return false, fmt.Sprintf("CRD %s is not %s yet (conditions: %v); a name conflict with another CRD shows in NamesAccepted", name, cond, crd.Status.Conditions)
		}
	}
	mapper := c.RESTMapper()
	gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if _, err := mapper.RESTMapping(gk, v.Name); err != nil {
			if resettable, ok := mapper.(meta.ResettableRESTMapper); ok && meta.IsNoMatchError(err) {
				resettable.Reset()
			}
			return false, fmt.Sprintf("CRD %s is Established but the client cannot map kind %s in version %s yet (discovery not refreshed): %v", name, gk.Kind, v.Name, err)
		}
	}
	return true, ""
}
