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
// until the spec ends: shared, or exclusively in AllNamespaces mode, whose cleanup deletes the kinds
// the CSV owns in every namespace (so no other run's spec may use them meanwhile, and then the case
// needs no cluster alone: cluster.LabelAPIScoped). Registered before the namespaces and the install,
// so it is released after every cleanup of the spec (the last registered runs first).
func (r *Installation) lockAPIs(ctx context.Context, mode operatorsv1alpha1.InstallModeType) {
	locker := r.in.Environment().APIs
	if locker == nil {
		return
	}
	apis, err := usedAPIs(r.in)
	r.g.Expect(err).NotTo(HaveOccurred())
	exclusive := mode == operatorsv1alpha1.InstallModeTypeAllNamespaces
	waited := r.phase("api-locks") // another run's spec using the APIs (or, exclusive, any spec) holds them
	done, err := locker.LockAPIs(ctx, apis, exclusive, r.t.Name())
	waited()
	r.g.Expect(err).NotTo(HaveOccurred(), "lock the APIs %v of %s on the shared cluster", apis, r.in.Name)
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

// HoldAPIsExclusivelyOf is HoldAPIsOf holding them exclusively: for a spec that deletes the bundles'
// CRDs (an OLM v1 uninstall does), so that no other spec uses those kinds, or installs them through
// OLM v0, meanwhile.
func HoldAPIsExclusivelyOf(ctx context.Context, locker cluster.APILocker, why string, bundleDirs ...string) (release func(), err error) {
	return holdAPIsOf(ctx, locker, true, why, bundleDirs...)
}

func holdAPIsOf(ctx context.Context, locker cluster.APILocker, exclusive bool, why string, bundleDirs ...string) (release func(), err error) {
	if locker == nil {
		return func() {}, nil
	}
	apis, err := apisOf(bundleDirs...)
	if err != nil {
		return nil, err
	}
	waited := budget.Start(why, "api-locks", nil)
	release, err = locker.LockAPIs(ctx, apis, exclusive, why)
	waited()
	if err != nil {
		return nil, fmt.Errorf("hold the APIs %v on the shared cluster: %w", apis, err)
	}
	return release, nil
}

// usedAPIs are the kinds (kind.group, lower case) the CSVs of in own or require (apisOf) and the
// kinds of its samples: what an AllNamespaces cleanup of this operator deletes, and what another's
// could delete of this spec's. Held exclusively in AllNamespaces mode, required kinds included: more
// than the cleanup needs, but one LockAPIs call per spec is what keeps two specs from waiting for each
// other. Built-in kinds of the core group are left out: no CSV owns them.
func usedAPIs(in OperandCleanupSpecInput) ([]string, error) {
	apis, err := apisOf(append([]string{in.BundleDir}, in.UpgradeBundleDirs...)...)
	if err != nil {
		return nil, err
	}
	for _, s := range in.Samples("api-lock-probe") {
		if gvk := s.GroupVersionKind(); gvk.Group != "" {
			apis = append(apis, strings.ToLower(gvk.Kind)+"."+gvk.Group)
		}
	}
	slices.Sort(apis)
	return slices.Compact(apis), nil
}

// apisOf are the kinds (kind.group, lower case) the CSVs of these bundles own or require, sorted: the
// APIs a spec that installs the operator without an Installation (from a catalog, say) holds with
// Environment.APIs.LockAPIs, so that no AllNamespaces cleanup deletes its objects meanwhile. Required
// kinds count: an operator makes objects of the kinds it requires (gizmo-operator a Widget per Gizmo),
// and an AllNamespaces cleanup of the operator owning them deletes them too (a flake hunt caught
// e2e/cleanup's gizmo spec losing its Widgets so), and so do those a WithoutRequiredAPIs variant dropped.
func apisOf(bundleDirs ...string) ([]string, error) {
	var apis []string
	for _, dir := range bundleDirs {
		b, err := bundle.Load(dir)
		if err != nil {
			return nil, err
		}
		if dropped := b.CSV.Annotations[DroppedRequiredAPIsAnnotation]; dropped != "" {
			apis = append(apis, strings.Split(dropped, ",")...)
		}
		crds := b.CSV.Spec.CustomResourceDefinitions
		for _, f := range []struct {
			field string
			descs []operatorsv1alpha1.CRDDescription
		}{{"owned", crds.Owned}, {"required", crds.Required}} {
			for _, crd := range f.descs {
				_, group, ok := strings.Cut(crd.Name, ".")
				if !ok || crd.Kind == "" {
					return nil, fmt.Errorf("bundle %s: CSV %s: spec.customresourcedefinitions.%s entry %q (kind %q): "+
						"want name <plural>.<group> and a kind", dir, b.CSV.Name, f.field, crd.Name, crd.Kind)
				}
				apis = append(apis, strings.ToLower(crd.Kind)+"."+group)
			}
		}
	}
	slices.Sort(apis)
	return slices.Compact(apis), nil
}
