package extensioncleanup

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/cleanuppass"
)

// plan is what an ordered uninstall may delete: the CRs of the CRDs the ClusterExtension owns (and no
// one else claims), in the namespaces its operator watches.
type plan struct {
	types []cleanuppass.Type
	// allowed maps every cleanable GroupKind to whether it is namespaced.
	allowed map[schema.GroupKind]bool
	// waited maps the GroupKinds of the extension's CRDs being deleted (an upgrade dropped them, or a
	// user deleted them) to whether they are namespaced: the API server deletes their CRs, never this
	// controller, but they keep the uninstall pending like any other, so that their operator is not let
	// go while it still has them to finalize.
	waited map[schema.GroupKind]bool
	// shared maps the GroupKinds of the extension's CRDs another ClusterExtension also references to
	// whether they are namespaced: their CRs are never deleted, but one already being deleted keeps the
	// uninstall pending (the other extension may let the CRD go before its operator finalizes it).
	shared map[schema.GroupKind]bool
	// blocked: the extension's CRDs an OLM v0 CSV also owns or requires ("crd (CSV ns/name)"). Their
	// CRs may be that operator's, so they are never deleted; but the garbage collector deletes the CRD,
	// and every CR of it, with the ClusterExtension, so the operator is not let go either (invariant 4).
	blocked []string
	// all: the operator watches every namespace; else namespaces.
	all        bool
	namespaces []string
	notes      []string
}

var (
	_ cleanuppass.Plan     = (*plan)(nil)
	_ cleanuppass.WaitOnly = (*plan)(nil)
)

func (p *plan) Types() []cleanuppass.Type { return p.types }

func (p *plan) Namespaces(t cleanuppass.Type) []string {
	if !t.Namespaced || p.all {
		return []string{""}
	}
	return p.namespaces
}

func (p *plan) watches(ns string) bool {
	if p.all {
		return true
	}
	for _, n := range p.namespaces {
		if n == ns {
			return true
		}
	}
	return false
}

// Allows: a kind the extension owns, in a namespace its operator watches (cluster-scoped kinds only for
// an operator watching all namespaces).
func (p *plan) Allows(gk schema.GroupKind, ns string) error {
	if _, ok := p.waited[gk]; ok {
		return fmt.Errorf("the CRD of %s is being deleted: the API server deletes its CRs, this controller only waits for them", gk)
	}
	namespaced, ok := p.allowed[gk]
	if !ok {
		return fmt.Errorf("%s is not a kind this ClusterExtension alone owns", gk)
	}
	return p.inScope(gk, namespaced, ns)
}

// inScope: a namespace the operator watches, or cluster-scoped for an operator watching all namespaces.
func (p *plan) inScope(gk schema.GroupKind, namespaced bool, ns string) error {
	if !namespaced {
		if ns != "" || !p.all {
			return fmt.Errorf("cluster-scoped %s is cleaned up only for an operator watching all namespaces", gk)
		}
		return nil
	}
	if ns == "" || !p.watches(ns) {
		return fmt.Errorf("namespace %q of %s is not one the operator watches (%s)", ns, gk, p.scope())
	}
	return nil
}

// WaitsOnly: the kinds of CRDs being deleted (cleanuppass.WaitOnly).
func (p *plan) WaitsOnly(gk schema.GroupKind) bool {
	_, ok := p.waited[gk]
	return ok
}

func (p *plan) Counts(gk schema.GroupKind, ns string, deleting bool) bool {
	if namespaced, ok := p.waited[gk]; ok {
		return p.inScope(gk, namespaced, ns) == nil
	}
	if namespaced, ok := p.shared[gk]; ok {
		return deleting && p.inScope(gk, namespaced, ns) == nil
	}
	return p.Allows(gk, ns) == nil
}
func (p *plan) AllCount(gk schema.GroupKind, ns string) bool {
	_, ok := p.allowed[gk]
	_, waited := p.waited[gk]
	return (ok || waited) && (p.all || (ns != "" && p.watches(ns)))
}

func (p *plan) scope() string {
	if p.all {
		return "all namespaces"
	}
	return strings.Join(p.namespaces, ",")
}

// key identifies what the plan allows: a verification before Deletes compares it.
func (p *plan) key() string {
	var gks []string
	for gk, ns := range p.allowed {
		gks = append(gks, fmt.Sprintf("%s:%t", gk, ns))
	}
	for gk, ns := range p.waited {
		gks = append(gks, fmt.Sprintf("%s:%t:waited", gk, ns))
	}
	for gk, ns := range p.shared {
		gks = append(gks, fmt.Sprintf("%s:%t:shared", gk, ns))
	}
	sort.Strings(gks)
	return strings.Join(gks, ";") + "|" + p.scope() + "|" + strings.Join(p.blocked, ";")
}

// buildPlan reads, live, the CRDs the extension owns and its operator's watched namespaces (the
// olm.targetNamespaces annotation operator-controller puts on each Deployment's pod template; "" or
// absent: all namespaces, v1.2.0's default). The CRs of a CRD another ClusterExtension also claims are
// never deleted (its reference keeps the CRD), only waited for once being deleted, and named in the
// notes; a CRD an OLM v0 CSV claims blocks the uninstall.
func (r *Reconciler) buildPlan(ctx context.Context, ce *unstructured.Unstructured, holderUID types.UID) (*plan, error) {
	p := &plan{allowed: map[schema.GroupKind]bool{}, waited: map[schema.GroupKind]bool{}, shared: map[schema.GroupKind]bool{}, all: true}
	deps, err := r.installed(ctx, ce, holderUID, deploymentGVK)
	if err != nil {
		return nil, err
	}
	nsSet := map[string]bool{}
	for _, d := range deps {
		dep := &appsv1.Deployment{}
		if err := r.live.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, dep); err != nil {
			return nil, fmt.Errorf("reading the operator's Deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
		if t, ok := dep.Spec.Template.Annotations[targetNamespacesAn]; ok && t != "" {
			for _, n := range strings.Split(t, ",") {
				nsSet[n] = true
			}
		} else {
			nsSet[""] = true
		}
	}
	if len(nsSet) > 0 && !nsSet[""] {
		p.all = false
		for n := range nsSet {
			p.namespaces = append(p.namespaces, n)
		}
		sort.Strings(p.namespaces)
	}
	crds, err := r.installed(ctx, ce, holderUID, crdGVK)
	if err != nil {
		return nil, err
	}
	claimed, err := r.claimedByCSVs(ctx)
	if err != nil {
		return nil, err
	}
	var shared, skipped, waited []string
	for _, m := range crds {
		// Another ClusterExtension's reference keeps the CRD from the garbage collector: no OLM v0 claim
		// blocks then (invariant 4 is about the CRD going with this extension).
		isShared := ownedByOtherExtension(m, ce)
		if by := claimed[m.Name]; by != "" && !isShared {
			p.blocked = append(p.blocked, m.Name+" (CSV "+by+")")
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := r.live.Get(ctx, types.NamespacedName{Name: m.Name}, crd); err != nil {
			return nil, fmt.Errorf("reading CRD %s: %w", m.Name, err)
		}
		version := servedVersion(crd)
		if version == "" {
			skipped = append(skipped, m.Name)
			continue
		}
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
		if !namespaced && !p.all {
			skipped = append(skipped, m.Name+" (cluster-scoped, operator not watching all namespaces)")
			continue
		}
		switch {
		case isShared:
			p.shared[gk] = namespaced
			shared = append(shared, m.Name+" (another ClusterExtension)")
		case crd.DeletionTimestamp != nil:
			p.waited[gk] = namespaced
			waited = append(waited, m.Name)
		default:
			p.allowed[gk] = namespaced
		}
		p.types = append(p.types, cleanuppass.Type{GVK: gk.WithVersion(version), Namespaced: namespaced})
	}
	sort.Slice(p.types, func(i, j int) bool { return p.types[i].GVK.String() < p.types[j].GVK.String() })
	sort.Strings(p.blocked)
	if len(shared) > 0 {
		sort.Strings(shared)
		p.notes = append(p.notes, "CRDs also claimed elsewhere, their CRs left in place (those being deleted waited for): "+strings.Join(shared, ", "))
	}
	if len(waited) > 0 {
		p.notes = append(p.notes, "CRDs being deleted, their CRs waited for (the API server deletes them): "+strings.Join(waited, ", "))
	}
	if len(skipped) > 0 {
		sort.Strings(skipped)
		p.notes = append(p.notes, "CRDs skipped: "+strings.Join(skipped, ", "))
	}
	return p, nil
}

// claimedByCSVs maps CRD names to an OLM v0 CSV (namespace/name) that owns or requires them; empty when
// OLM v0 is not installed.
func (r *Reconciler) claimedByCSVs(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersionList"})
	if err := r.live.List(ctx, l); err != nil {
		if meta.IsNoMatchError(err) {
			return out, nil
		}
		return nil, fmt.Errorf("listing CSVs (a CRD an OLM v0 operator owns too is never cleaned up): %w", err)
	}
	for _, csv := range l.Items {
		if _, copied := csv.GetLabels()["olm.copiedFrom"]; copied {
			continue
		}
		for _, field := range []string{"owned", "required"} {
			defs, _, _ := unstructured.NestedSlice(csv.Object, "spec", "customresourcedefinitions", field)
			for _, d := range defs {
				if m, ok := d.(map[string]any); ok {
					if n, _ := m["name"].(string); n != "" {
						out[n] = csv.GetNamespace() + "/" + csv.GetName()
					}
				}
			}
		}
	}
	return out, nil
}

// servedVersion is the storage version if served, else the first served one.
func servedVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	first := ""
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if v.Storage {
			return v.Name
		}
		if first == "" {
			first = v.Name
		}
	}
	return first
}
