package operandcleanup

import (
	"context"
	"sort"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// replacesField indexes CSVs by spec.replaces in the cache.
const replacesField = "spec.replaces"

// isCopied reports whether the CSV is one of OLM's copies in a target namespace (not the installation).
func isCopied(csv *v1alpha1.ClusterServiceVersion) bool {
	if _, ok := csv.GetLabels()[v1alpha1.CopiedLabelKey]; ok {
		return true
	}
	return csv.Status.Reason == v1alpha1.CSVReasonCopied
}

// isReplacedByPhase reports whether OLM has decided to delete the CSV as a step of an upgrade: phase
// Deleting with reason Replaced (its successor succeeded). Such a deletion is never an uninstall, even if
// the successor has vanished since. Phase Replacing alone is not enough: OLM leaves a CSV in Replacing
// when its successor is deleted (operator.go: "marked as replacement, but no replacement CSV found"),
// and that CSV is then the whole installation again, with the user's opt-in.
func isReplacedByPhase(csv *v1alpha1.ClusterServiceVersion) bool {
	return csv.Status.Phase == v1alpha1.CSVPhaseDeleting && csv.Status.Reason == v1alpha1.CSVReasonReplaced
}

func isDeleting(obj client.Object) bool { return !obj.GetDeletionTimestamp().IsZero() }

func hasFinalizer(obj client.Object) bool { return controllerutil.ContainsFinalizer(obj, Finalizer) }

func keyOf(obj client.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// successors returns the non-copied CSVs in the CSV's namespace whose spec.replaces names it, sorted by
// name. r may be the cache (uses the field index) or a live reader (filters in memory).
func successors(ctx context.Context, r client.Reader, csv *v1alpha1.ClusterServiceVersion, indexed bool) ([]v1alpha1.ClusterServiceVersion, error) {
	list := &v1alpha1.ClusterServiceVersionList{}
	opts := []client.ListOption{client.InNamespace(csv.Namespace)}
	if indexed {
		opts = append(opts, client.MatchingFields{replacesField: csv.Name})
	}
	if err := r.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	var out []v1alpha1.ClusterServiceVersion
	for i := range list.Items {
		s := &list.Items[i]
		if s.Spec.Replaces != csv.Name || s.Name == csv.Name || isCopied(s) {
			continue
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// liveSuccessor returns a successor of csv that is not being deleted, looking through the successors
// that are (v1 <- v2 being deleted <- v3: v1 is still replaced), or nil when there is none: every
// successor is going too, so csv is the installation again and its deletion an uninstall.
func liveSuccessor(ctx context.Context, r client.Reader, csv *v1alpha1.ClusterServiceVersion, indexed bool) (*v1alpha1.ClusterServiceVersion, error) {
	seen := map[string]bool{csv.Name: true}
	next := []*v1alpha1.ClusterServiceVersion{csv}
	for len(next) > 0 {
		cur := next[0]
		next = next[1:]
		succ, err := successors(ctx, r, cur, indexed)
		if err != nil {
			return nil, err
		}
		for i := range succ {
			s := &succ[i]
			if seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			if !isDeleting(s) {
				return s, nil
			}
			next = append(next, s)
		}
	}
	return nil, nil
}

// indexReplaces is the field indexer for replacesField.
func indexReplaces(obj client.Object) []string {
	csv, ok := obj.(*v1alpha1.ClusterServiceVersion)
	if !ok || csv.Spec.Replaces == "" {
		return nil
	}
	return []string{csv.Spec.Replaces}
}

// stripCSV is the cache transform for CSVs: it drops the large fields this controller never reads. Objects
// from the cache are therefore never written back whole: every write is a patch computed between two
// copies of the same stripped object, so the dropped fields never appear in it.
func stripCSV(obj interface{}) (interface{}, error) {
	csv, ok := obj.(*v1alpha1.ClusterServiceVersion)
	if !ok {
		return obj, nil
	}
	csv.SetManagedFields(nil)
	csv.Spec.Icon = nil
	csv.Spec.Description = ""
	csv.Spec.InstallStrategy = v1alpha1.NamedInstallStrategy{}
	csv.Spec.RelatedImages = nil
	csv.Spec.WebhookDefinitions = nil
	csv.Status.RequirementStatus = nil
	if a := csv.GetAnnotations(); a != nil {
		if _, ok := a["alm-examples"]; ok {
			b := make(map[string]string, len(a))
			for k, v := range a {
				if k != "alm-examples" {
					b[k] = v
				}
			}
			csv.SetAnnotations(b)
		}
	}
	return csv, nil
}
