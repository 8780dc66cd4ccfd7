package specs

import (
	"context"
	"fmt"
	"slices"
	"strings"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/cleanup-e2e/cleanup-e2e/framework/budget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/bundle"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
)

// lockAPIs holds, on a cluster other runs share (Environment.APIs), the APIs the installation uses
// until the spec ends: shared, but in AllNamespaces mode, whose cleanup deletes the kinds the CSV owns
// in every namespace, those exclusively (so no other run's spec may use them meanwhile, and then the
// case needs no cluster alone: cluster.LabelAPIScoped). Registered before the namespaces and the
// install, so it is released after every cleanup of the spec (the last registered runs first).
func (r *Installation) lockAPIs(ctx context.Context, mode operatorsv1alpha1.InstallModeType) {
	locker := r.in.Environment().APIs
	if locker == nil {
		return
	}
	holds, err := usedAPIs(r.in, mode == operatorsv1alpha1.InstallModeTypeAllNamespaces)
	r.g.Expect(err).NotTo(HaveOccurred())
	waited := r.phase("api-locks") // another run's spec using the APIs (or, exclusive, any spec) holds them
	done, err := locker.LockAPIs(ctx, holds, r.t.Name())
	waited()
	r.g.Expect(err).NotTo(HaveOccurred(), "lock the APIs %+v of %s on the shared cluster", holds, r.in.Name)
	r.t.Cleanup(func(context.Context) { done() })
}

// HoldAPIsOf holds the APIs of these bundles' CSVs (apisOf) shared on locker — timed as the api-locks
// phase of the spec named why — and returns their release: for a spec of your own that runs an operator
// or makes objects of its kinds without an Installation (from a catalog, in a payload), so that no
// AllNamespaces cleanup of another spec deletes them meanwhile. Take it before the objects exist and
// release it after the spec's cleanups. A nil locker (a cluster no other spec uses) holds nothing.
func HoldAPIsOf(ctx context.Context, locker cluster.APILocker, why string, bundleDirs ...string) (release func(), err error) {
	return holdAPIsOf(ctx, locker, false, why, bundleDirs...)
}

// HoldAPIsExclusivelyOf is HoldAPIsOf holding exclusively the kinds the bundles' CSVs own: for a spec
// that deletes the bundles' CRDs (an OLM v1 uninstall does), so that no other spec uses those kinds,
// or installs them through OLM v0, meanwhile. The kinds they require stay shared.
func HoldAPIsExclusivelyOf(ctx context.Context, locker cluster.APILocker, why string, bundleDirs ...string) (release func(), err error) {
	return holdAPIsOf(ctx, locker, true, why, bundleDirs...)
}

func holdAPIsOf(ctx context.Context, locker cluster.APILocker, exclusive bool, why string, bundleDirs ...string) (release func(), err error) {
	if locker == nil {
		return func() {}, nil
	}
	owned, required, err := apisOf(bundleDirs...)
	if err != nil {
		return nil, err
	}
	holds := cluster.APIHolds{Shared: slices.Concat(owned, required)}
	if exclusive {
		holds = cluster.APIHolds{Exclusive: owned, Shared: required}
	}
	waited := budget.Start(why, "api-locks", nil)
	release, err = locker.LockAPIs(ctx, holds, why)
	waited()
	if err != nil {
		return nil, fmt.Errorf("hold the APIs %+v on the shared cluster: %w", holds, err)
	}
	return release, nil
}

// usedAPIs are the kinds (kind.group, lower case) the CSVs of in own or require (apisOf) and the
// kinds of its samples: what an AllNamespaces cleanup of this operator deletes, and what another's
// could delete of this spec's. With exclusive (an AllNamespaces install, an OLM v1 uninstall), the
// owned kinds are held exclusively — its cleanup deletes them everywhere, an OLM v1 uninstall deletes
// their CRDs — and the others shared: required kinds are objects the operator makes (gizmo-operator a
// Widget per Gizmo), which another spec's AllNamespaces cleanup of their owner would delete. Built-in
// kinds of the core group are left out: no CSV owns them.
func usedAPIs(in OperandCleanupSpecInput, exclusive bool) (cluster.APIHolds, error) {
	owned, others, err := apisOf(append([]string{in.BundleDir}, in.UpgradeBundleDirs...)...)
	if err != nil {
		return cluster.APIHolds{}, err
	}
	for _, s := range in.Samples("api-lock-probe") {
		if gvk := s.GroupVersionKind(); gvk.Group != "" {
			if api := strings.ToLower(gvk.Kind) + "." + gvk.Group; !slices.Contains(owned, api) {
				others = append(others, api)
			}
		}
	}
	others = sortedUnion(others)
	if !exclusive {
		return cluster.APIHolds{Shared: sortedUnion(owned, others)}, nil
	}
	return cluster.APIHolds{Exclusive: owned, Shared: others}, nil
}

// apisOf are the kinds (kind.group, lower case) the CSVs of these bundles own, and those they require
// but none owns, each sorted: the APIs a spec that installs the operator without an Installation (from
// a catalog, say) holds (HoldAPIsOf), so that no AllNamespaces cleanup deletes its objects meanwhile.
// Required kinds count: an operator makes objects of the kinds it requires (gizmo-operator a Widget
// per Gizmo), and an AllNamespaces cleanup of the operator owning them deletes them too (a flake hunt
// caught e2e/cleanup's gizmo spec losing its Widgets so), and so do those a WithoutRequiredAPIs
// variant dropped.
func apisOf(bundleDirs ...string) (owned, required []string, err error) {
	for _, dir := range bundleDirs {
		b, err := bundle.Load(dir)
		if err != nil {
			return nil, nil, err
		}
		if dropped := b.CSV.Annotations[DroppedRequiredAPIsAnnotation]; dropped != "" {
			required = append(required, strings.Split(dropped, ",")...)
		}
		crds := b.CSV.Spec.CustomResourceDefinitions
		for _, f := range []struct {
			field string
			descs []operatorsv1alpha1.CRDDescription
			to    *[]string
		}{{"owned", crds.Owned, &owned}, {"required", crds.Required, &required}} {
			for _, crd := range f.descs {
				_, group, ok := strings.Cut(crd.Name, ".")
				if !ok || crd.Kind == "" {
					return nil, nil, fmt.Errorf("bundle %s: CSV %s: spec.customresourcedefinitions.%s entry %q (kind %q): "+
						"want name <plural>.<group> and a kind", dir, b.CSV.Name, f.field, crd.Name, crd.Kind)
				}
				*f.to = append(*f.to, strings.ToLower(crd.Kind)+"."+group)
			}
		}
	}
	owned = sortedUnion(owned)
	required = slices.DeleteFunc(sortedUnion(required), func(api string) bool { return slices.Contains(owned, api) })
	return owned, required, nil
}

// sortedUnion is the lists' elements, sorted, each once.
func sortedUnion(lists ...[]string) []string {
	out := slices.Concat(lists...)
	slices.Sort(out)
	return slices.Compact(out)
}
