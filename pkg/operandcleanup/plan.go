package operandcleanup

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// operandType is one owned CRD whose instances are cleaned up.
type operandType struct {
	crdName    string
	gvk        schema.GroupVersionKind
	namespaced bool
}

// plan is what one cleanup pass may delete: owned, not required, CRD types in the target namespaces
// that are targets both now and when the uninstall began; and what it waits for: every operand already
// being deleted in the namespaces the operator watched when the uninstall began.
type plan struct {
	// targets is where Deletes may go: the current targets that the operator also watched when the
	// uninstall began. A namespace added since is not watched by the operator (OLM no longer updates a
	// deleted CSV's Deployment), and one removed since is no longer the installation's.
	targets targets
	// started is the operator's targets when the uninstall began (UninstallTargetsAnnotation): its
	// Deployment keeps watching them, so a CR being deleted there (by this cleanup or anyone) must be
	// gone before the operator may go, or nothing will ever remove its finalizers.
	started targets
	types   []operandType
	// notes explain what was skipped and why; they go into the status message.
	notes []string
	// allowed maps every cleanable GroupKind to whether it is namespaced.
	allowed map[schema.GroupKind]bool
	// excluded holds, per GroupKind, the namespaces another installation also serves (sharedOperands):
	// never deleted by this plan.
	excluded map[schema.GroupKind]*exclusion
}

// allows re-verifies one object right before it is deleted: its type must be owned (and not required)
// by the CSV, its namespace must be a target (cluster-scoped objects only for global operators) and no
// other installation may serve that type there.
func (p *plan) allows(gk schema.GroupKind, namespace string) error {
	namespaced, ok := p.allowed[gk]
	if !ok {
		return fmt.Errorf("%s is not an owned, non-required type of this CSV", gk)
	}
	if ex := p.excluded[gk]; ex.covers(namespace) {
		return fmt.Errorf("%s in %q is also served by %s", gk, namespace, joinCapped(keys(ex.by)))
	}
	if !namespaced {
		if namespace != "" || !p.targets.all {
			return fmt.Errorf("cluster-scoped %s may only be cleaned up by a global operator", gk)
		}
		return nil
	}
	if namespace == "" || !p.targets.contains(namespace) {
		return fmt.Errorf("namespace %q of %s is not a target namespace both now and when the uninstall began (%s)", namespace, gk, p.targets)
	}
	return nil
}

// awaits reports whether an operand of gk in namespace, once being deleted, keeps the cleanup pending: the
// operator watched its namespace when the uninstall began (cluster-scoped: it was global), whether or not
// another installation serves it there now (invariant 7): that one may be gone before it finalizes it, as
// an OLM v1 ClusterExtension that claimed the CRD after this cleanup's deletes and let it go again.
func (p *plan) awaits(gk schema.GroupKind, namespace string) bool {
	namespaced, ok := p.allowed[gk]
	if !ok {
		return false
	}
	if !namespaced {
		return namespace == "" && p.started.all
	}
	return namespace != "" && p.started.contains(namespace)
}

// counts reports whether an operand keeps the cleanup pending: the plan may delete it, or it is being
// deleted where the operator has to finalize it (awaits).
func (p *plan) counts(gk schema.GroupKind, namespace string, deleting bool) bool {
	return p.allows(gk, namespace) == nil || (deleting && p.awaits(gk, namespace))
}

// requiredKeys returns the names and the group/kinds of the CSV's required CRDs.
func requiredKeys(csv *v1alpha1.ClusterServiceVersion) (map[string]bool, map[schema.GroupKind]bool) {
	names, gks := map[string]bool{}, map[schema.GroupKind]bool{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Required {
		names[d.Name] = true
		if i := strings.IndexByte(d.Name, '.'); i > 0 && d.Kind != "" {
			gks[schema.GroupKind{Group: d.Name[i+1:], Kind: d.Kind}] = true
		}
	}
	return names, gks
}

// buildPlan resolves the CSV's owned CRDs from the live CRD objects (uncached: CRDs are large and only
// needed during a cleanup), pairs them with the target namespaces and leaves out what other installations
// (listed through csvs: the cache, or the API server right before deleting) also serve.
// t is the current targets; the ones when the uninstall began come from the CSV (t when none are recorded).
func buildPlan(ctx context.Context, live, csvs client.Reader, csv *v1alpha1.ClusterServiceVersion, t targets) (*plan, error) {
	started, ok := uninstallTargets(csv)
	if !ok {
		started = t
	}
	p := &plan{targets: t.intersect(started), started: started, allowed: map[schema.GroupKind]bool{}}
	reqNames, reqGKs := requiredKeys(csv)
	var missing, notServed, required, clusterScoped []string
	seen := map[string]bool{}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		if d.Name == "" || seen[d.Name] {
			continue
		}
		seen[d.Name] = true
		if reqNames[d.Name] {
			required = append(required, d.Name)
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := live.Get(ctx, types.NamespacedName{Name: d.Name}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				missing = append(missing, d.Name)
				continue
			}
			return nil, fmt.Errorf("reading owned CRD %s: %w", d.Name, err)
		}
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		if reqGKs[gk] {
			required = append(required, d.Name)
			continue
		}
		version := servedVersion(crd, d.Version)
		if version == "" {
			notServed = append(notServed, d.Name)
			continue
		}
		namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
		if !namespaced && !started.all {
			clusterScoped = append(clusterScoped, d.Name)
			continue
		}
		t := operandType{crdName: d.Name, gvk: gk.WithVersion(version), namespaced: namespaced}
		p.types = append(p.types, t)
		p.allowed[gk] = namespaced
		if by := extensionClaim(crd); by != "" && !unsafeIgnoreOtherCSVs.Load() {
			p.exclude(t, targets{all: true, source: "an OLM v1 extension: counted as all namespaces"}, by)
		}
	}
	sort.Slice(p.types, func(i, j int) bool { return p.types[i].crdName < p.types[j].crdName })
	if len(missing) > 0 {
		p.notes = append(p.notes, "owned CRDs not installed, skipped: "+joinCapped(missing))
	}
	if len(notServed) > 0 {
		p.notes = append(p.notes, "owned CRDs without a served version, skipped: "+joinCapped(notServed))
	}
	if len(required) > 0 {
		p.notes = append(p.notes, "CRDs both owned and required are never cleaned up: "+joinCapped(required))
	}
	if len(clusterScoped) > 0 {
		p.notes = append(p.notes, "cluster-scoped owned CRDs skipped (operator is not global): "+joinCapped(clusterScoped))
	}
	if err := sharedOperands(ctx, csvs, csv, p); err != nil {
		return nil, err
	}
	p.notes = append(p.notes, p.exclusionNotes()...)
	return p, nil
}

// servedVersion picks the version the CSV names if served, else the storage version if served, else the
// first served one.
func servedVersion(crd *apiextensionsv1.CustomResourceDefinition, preferred string) string {
	var storage, first string
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if v.Name == preferred {
			return v.Name
		}
		if v.Storage {
			storage = v.Name
		}
		if first == "" {
			first = v.Name
		}
	}
	if storage != "" {
		return storage
	}
	return first
}

// joinCapped joins up to 10 names, sorted, and says how many more there are.
func joinCapped(names []string) string {
	sort.Strings(names)
	const max = 10
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}
