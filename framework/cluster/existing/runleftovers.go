package existing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RunLeftovers names what the tests themselves create on the cluster and never delete, because many
// specs share it: the CRDs their operators' bundles bring (OLM leaves CRDs behind on uninstall, by
// design) and namespaces their operators make. On an existing cluster the run must leave these as it
// found them, so Stop deletes those that did not exist when the provider started — and nothing else:
// a CRD or namespace that was already there is never touched, whatever the run did with it.
type RunLeftovers struct {
	// CRDGroups: CRDs whose spec.group is one of these.
	CRDGroups []string
	// Namespaces: these namespaces.
	Namespaces []string
}

// WithRunLeftovers makes Stop delete the CRDs and namespaces of l that the run created (see
// RunLeftovers). Ignored with WithWaitOnly: the process that installed is the one that cleans up.
func WithRunLeftovers(l RunLeftovers) Option { return func(o *options) { o.runLeftovers = l } }

// snapshotRunLeftovers records which of the run-leftover CRDs and namespaces exist before the run.
func (p *Provider) snapshotRunLeftovers(ctx context.Context) error {
	l := p.opts.runLeftovers
	crds, err := p.crdsInGroups(ctx, l.CRDGroups)
	if err != nil {
		return err
	}
	p.preexisting = map[string]bool{}
	for _, crd := range crds {
		p.preexisting["crd/"+crd.Name] = true
	}
	for _, ns := range l.Namespaces {
		err := p.c.Get(ctx, types.NamespacedName{Name: ns}, &corev1.Namespace{})
		switch {
		case err == nil:
			p.preexisting["ns/"+ns] = true
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("read namespace %s: %w", ns, err)
		}
	}
	return nil
}

// runLeftovers returns the CRDs and namespaces of RunLeftovers that exist now and did not when the
// provider started, with their UIDs (Stop deletes them with a UID precondition).
func (p *Provider) runLeftovers(ctx context.Context) ([]createdObject, error) {
	if p.preexisting == nil {
		return nil, nil // no snapshot: nothing is known to be the run's
	}
	l := p.opts.runLeftovers
	crds, err := p.crdsInGroups(ctx, l.CRDGroups)
	if err != nil {
		return nil, err
	}
	var out []createdObject
	for _, crd := range crds {
		if !p.preexisting["crd/"+crd.Name] {
			out = append(out, createdObject{gvk: apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), name: crd.Name, uid: crd.UID})
		}
	}
	for _, name := range l.Namespaces {
		if p.preexisting["ns/"+name] {
			continue
		}
		ns := &corev1.Namespace{}
		err := p.c.Get(ctx, types.NamespacedName{Name: name}, ns)
		switch {
		case err == nil:
			out = append(out, createdObject{gvk: corev1.SchemeGroupVersion.WithKind("Namespace"), name: name, uid: ns.UID})
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("read namespace %s: %w", name, err)
		}
	}
	return out, nil
}

func (p *Provider) crdsInGroups(ctx context.Context, groups []string) ([]apiextensionsv1.CustomResourceDefinition, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := p.c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list CRDs: %w", err)
	}
	var out []apiextensionsv1.CustomResourceDefinition
	for _, crd := range list.Items {
		if slices.Contains(groups, crd.Spec.Group) {
			out = append(out, crd)
		}
	}
	return out, nil
}

// removeRunLeftovers deletes the run's leftovers and waits until they are gone. A CRD whose custom
// resources keep finalizers (their operator gone) cannot go: the error names them rather than
// removing finalizers, which would hide a real leak.
func (p *Provider) removeRunLeftovers(ctx context.Context) error {
	objs, err := p.runLeftovers(ctx)
	if err != nil || len(objs) == 0 {
		return err
	}
	var errs []error
	for _, o := range objs {
		errs = append(errs, p.remove(ctx, o))
	}
	for _, o := range objs {
		if err := p.waitGone(ctx, o); err != nil {
			errs = append(errs, fmt.Errorf("%w%s", err, p.blockers(ctx, o)))
		}
	}
	names := make([]string, len(objs))
	for i, o := range objs {
		names[i] = o.String()
	}
	p.opts.log.Info("removed what the tests left on the cluster (created during the run)", "objects", strings.Join(names, ", "))
	return errors.Join(errs...)
}

// blockers says which custom resources of a CRD that will not go still hold finalizers.
func (p *Provider) blockers(ctx context.Context, o createdObject) string {
	if o.gvk.Kind != "CustomResourceDefinition" {
		return ""
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := p.c.Get(ctx, client.ObjectKey{Name: o.name}, crd); err != nil || len(crd.Spec.Versions) == 0 {
		return ""
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(crd.Spec.Group + "/" + storageVersion(crd))
	list.SetKind(crd.Spec.Names.ListKind)
	if err := p.c.List(ctx, list); err != nil {
		return fmt.Sprintf(" (list its %s: %v)", crd.Spec.Names.Plural, err)
	}
	var held []string
	for _, cr := range list.Items {
		if len(cr.GetFinalizers()) > 0 {
			held = append(held, fmt.Sprintf("%s %s finalizers %v", crd.Spec.Names.Kind, client.ObjectKeyFromObject(&cr), cr.GetFinalizers()))
		}
	}
	if len(held) == 0 {
		return ""
	}
	if len(held) > 5 {
		held = append(held[:5], fmt.Sprintf("and %d more", len(held)-5))
	}
	return "; custom resources still holding finalizers (is their operator gone?): " + strings.Join(held, ", ")
}

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return crd.Spec.Versions[0].Name
}
