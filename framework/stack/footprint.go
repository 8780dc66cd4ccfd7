package stack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Footprint names what the specs themselves create on the cluster and never delete, because many
// specs share it: the CRDs their operators' bundles bring (OLM leaves CRDs behind on uninstall, by
// design) and namespaces their operators make. Teardown deletes those that did not exist when Ensure
// ran — and nothing else: a CRD or namespace that was already there is never touched, whatever the
// run did with it.
type Footprint struct {
	// CRDGroups: CRDs whose spec.group is one of these.
	CRDGroups []string
	// Namespaces: these namespaces.
	Namespaces []string
}

// footprintBefore records which of the footprint's CRDs and namespaces exist ("crd/<name>",
// "ns/<name>").
func footprintBefore(ctx context.Context, c client.Client, f Footprint) (map[string]bool, error) {
	crds, err := crdsInGroups(ctx, c, f.CRDGroups)
	if err != nil {
		return nil, err
	}
	before := map[string]bool{}
	for _, crd := range crds {
		before["crd/"+crd.Name] = true
	}
	for _, ns := range f.Namespaces {
		err := c.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{})
		switch {
		case err == nil:
			before["ns/"+ns] = true
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("read namespace %s: %w", ns, err)
		}
	}
	return before, nil
}

// footprintCreated returns the footprint's CRDs and namespaces that exist now and did not before,
// with their UIDs.
func footprintCreated(ctx context.Context, c client.Client, f Footprint, before map[string]bool) ([]entry, error) {
	crds, err := crdsInGroups(ctx, c, f.CRDGroups)
	if err != nil {
		return nil, err
	}
	var out []entry
	for _, crd := range crds {
		if !before["crd/"+crd.Name] {
			out = append(out, entry{gvk: apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), name: crd.Name, uid: crd.UID})
		}
	}
	for _, name := range f.Namespaces {
		if before["ns/"+name] {
			continue
		}
		ns := &corev1.Namespace{}
		err := c.Get(ctx, types.NamespacedName{Name: name}, ns)
		switch {
		case err == nil:
			out = append(out, entry{gvk: corev1.SchemeGroupVersion.WithKind("Namespace"), name: name, uid: ns.UID})
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("read namespace %s: %w", name, err)
		}
	}
	return out, nil
}

// crdsInGroups lists the CRDs of groups, by their metadata: the list would otherwise carry every CRD
// of the cluster whole, OLM's large ones too. A CRD's group is its name after the first dot (the API
// server accepts a CRD only as <plural>.<group>).
func crdsInGroups(ctx context.Context, c client.Client, groups []string) ([]metav1.PartialObjectMetadata, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list CRDs: %w", err)
	}
	var out []metav1.PartialObjectMetadata
	for _, crd := range list.Items {
		if _, group, _ := strings.Cut(crd.Name, "."); slices.Contains(groups, group) {
			out = append(out, crd)
		}
	}
	return out, nil
}
