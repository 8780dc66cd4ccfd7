package operandcleanup

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// An operator installation can be made of several CSVs at once: during an upgrade the predecessor keeps
// running until its successor succeeds, and a successor exists before OLM accepts it. Deleting one of them
// is not an uninstall while another is still installed (invariant 2 in doc.go).

// unsafeIgnoreOtherCSVs is a test hook: true makes the controller forget the other CSVs (an installed
// predecessor, other installations serving the same types), i.e. drop invariants 2 and 3 (the data loss
// of issue 12 the randomized lifecycle test must catch). Never set outside tests.
var unsafeIgnoreOtherCSVs atomic.Bool

// installedPredecessor returns the CSV csv's spec.replaces names when it still exists in the namespace,
// is not being deleted and is not an OLM copy: the operator of that CSV is still installed, so deleting
// csv (an upgrade target) must not clean up. It always asks r; callers pass the API server (live).
func installedPredecessor(ctx context.Context, r client.Reader, csv *v1alpha1.ClusterServiceVersion) (*v1alpha1.ClusterServiceVersion, error) {
	name := csv.Spec.Replaces
	if unsafeIgnoreOtherCSVs.Load() || name == "" || name == csv.Name {
		return nil, nil
	}
	prev := &v1alpha1.ClusterServiceVersion{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: csv.Namespace, Name: name}, prev); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading predecessor CSV %s/%s: %w", csv.Namespace, name, err)
	}
	if isDeleting(prev) || isCopied(prev) {
		return nil, nil
	}
	return prev, nil
}

// notCopiedSelector selects the installations' CSVs, not OLM's copies in target namespaces.
func notCopiedSelector() labels.Selector {
	req, err := labels.NewRequirement(v1alpha1.CopiedLabelKey, selection.DoesNotExist, nil)
	if err != nil {
		panic(err) // a constant requirement
	}
	return labels.NewSelector().Add(*req)
}

// sharedOperands finds the other installations that serve some of the plan's operand types in some of
// its target namespaces: every CSV (cluster-wide, not copied, not being deleted, not csv itself) that owns
// one of the plan's CRDs and whose targets overlap the plan's. Their (type, namespace) pairs are excluded
// from the plan (invariant 3 in doc.go). A CSV whose targets cannot be resolved blocks the plan while OLM
// has not yet placed it (no olm.targetNamespaces, not Failed: created a moment ago, beside its
// OperatorGroup), and counts as global once OLM failed it (no or several OperatorGroups): counted as
// global at once, an install of the same operator elsewhere, starting as the uninstall began, skipped
// its cleanup for good.
func sharedOperands(ctx context.Context, r client.Reader, csv *v1alpha1.ClusterServiceVersion, p *plan) error {
	if len(p.types) == 0 || unsafeIgnoreOtherCSVs.Load() {
		return nil
	}
	list := &v1alpha1.ClusterServiceVersionList{}
	if err := r.List(ctx, list, client.MatchingLabelsSelector{Selector: notCopiedSelector()}); err != nil {
		return fmt.Errorf("listing CSVs to find other installations: %w", err)
	}
	byCRD := map[string]operandType{}
	for _, t := range p.types {
		byCRD[t.crdName] = t
	}
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == csv.UID || isDeleting(other) || isCopied(other) {
			continue
		}
		var shared []operandType
		for _, d := range other.Spec.CustomResourceDefinitions.Owned {
			if t, ok := byCRD[d.Name]; ok {
				shared = append(shared, t)
			}
		}
		if len(shared) == 0 {
			continue
		}
		ot, err := resolveTargets(ctx, r, other)
		var blocked *errNoTargets
		switch {
		case errors.As(err, &blocked) && other.Status.Phase != v1alpha1.CSVPhaseFailed:
			return &errNoTargets{on: keyOf(other), msg: fmt.Sprintf("CSV %s also owns %s and OLM has not placed it yet (%s): waiting to tell whether it serves these operands",
				keyOf(other), shared[0].crdName, blocked.msg)}
		case errors.As(err, &blocked):
			ot = targets{all: true, source: "unresolved: treated as all namespaces"}
		case err != nil:
			return err
		}
		for _, t := range shared {
			p.exclude(t, ot, "CSV "+keyOf(other).String())
		}
	}
	return nil
}

// exclusion is what other installations also serve of one operand type.
type exclusion struct {
	// all: every namespace (a global installation), or the type is cluster-scoped and another
	// installation owns it.
	all        bool
	namespaces map[string]bool
	by         map[string]bool // those installations: "CSV <ns>/<name>", "ClusterExtension <name>"
}

// exclude records that the installation by (with targets ot) also serves type t, for the namespaces the
// plan's targets when the uninstall began (a superset of its current ones) and ot have in common.
func (p *plan) exclude(t operandType, ot targets, by string) {
	gk := t.gvk.GroupKind()
	ex := p.excluded[gk]
	if ex == nil {
		ex = &exclusion{namespaces: map[string]bool{}, by: map[string]bool{}}
	}
	serves := false // some of the plan's targets: only then is by named in the notes
	switch {
	case !t.namespaced || (ot.all && p.started.all):
		ex.all, serves = true, true
	case ot.all:
		for _, ns := range p.started.namespaces {
			ex.namespaces[ns], serves = true, true
		}
	default:
		for _, ns := range ot.namespaces {
			if p.started.contains(ns) {
				ex.namespaces[ns], serves = true, true
			}
		}
	}
	if !serves {
		return
	}
	ex.by[by] = true
	if p.excluded == nil {
		p.excluded = map[schema.GroupKind]*exclusion{}
	}
	p.excluded[gk] = ex
}

// covers reports whether another installation serves gk in namespace ns.
func (e *exclusion) covers(ns string) bool { return e != nil && (e.all || e.namespaces[ns]) }

// exclusionNotes describes the exclusions for the status message and events.
func (p *plan) exclusionNotes() []string {
	var gks []schema.GroupKind
	for gk := range p.excluded {
		gks = append(gks, gk)
	}
	sort.Slice(gks, func(i, j int) bool { return gks[i].String() < gks[j].String() })
	var out []string
	for _, gk := range gks {
		ex := p.excluded[gk]
		where := "in every namespace"
		if !ex.all {
			where = "in " + joinCapped(keys(ex.namespaces))
		}
		out = append(out, fmt.Sprintf("%s %s left in place: also served by %s", gk, where, joinCapped(keys(ex.by))))
	}
	return out
}

// exclusionKey is a stable text of the exclusions, so samePlan sees a change in them.
func (p *plan) exclusionKey() string {
	return strings.Join(p.exclusionNotes(), "|")
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// extensionClaim names the OLM v1 installation that also installed crd ("ClusterExtension <name>"), or
// "" if none: operator-controller gives every object it installs a controller reference to its
// ClusterExtension, and an ordered uninstall of the extension (pkg/extensioncleanup) holds the CRD,
// marked HeldByAnnotation, while that operator still finalizes CRs. Its operator serves the CRD's CRs
// wherever it watches, which the CRD does not say: counted as every namespace (OLM v1's default), so a
// narrower extension leaves more in place, never less. A CRD an orphan uninstall left behind
// (OrphanedFromAnnotation, no owner) has no installation left and claims nothing. The window: OLM v0's
// install plan writes an existing CRD with a full Update (catalog/step.go), which drops the reference
// until operator-controller applies its release again (applier/helm.go, Reconcile when unchanged).
func extensionClaim(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, ref := range crd.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == extensioncleanup.ClusterExtensionGVK.Group && ref.Kind == extensioncleanup.ClusterExtensionGVK.Kind {
			return "ClusterExtension " + ref.Name
		}
	}
	if _, held := crd.Annotations[extensioncleanup.HeldByAnnotation]; held {
		if name := crd.Labels[extensioncleanup.OwnerNameLabel]; name != "" {
			return "ClusterExtension " + name + " (its ordered uninstall)"
		}
		return "a ClusterExtension's ordered uninstall"
	}
	return ""
}
