package olm

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A resolution OLM will not retry on its own. After an upgrade, OLM's catalog operator resolves the
// namespace again as soon as the Subscription's status changes; when that happens before the replaced
// CSV is deleted, the replaced CSV is still in its snapshot (pkg/controller/registry/resolver/
// source_csvs.go lists every CSV that is not copied) and "is not referenced by a subscription", so the
// resolution fails with ConstraintsNotSatisfiable. syncResolvingNamespace
// (pkg/controller/operators/catalog/operator.go) treats that error as terminal and does not requeue:
// the next upgrade waits for an unrelated event, which may never come within the wait (chained
// upgrades on kind got stuck so). An administrator would touch the Subscription; so do the waits here, but
// only when every CSV the failure names as unreferenced is gone, so a real conflict still fails.

// ResolveNudgeAnnotation is set on a Subscription (to the time) to make OLM resolve its namespace again.
const ResolveNudgeAnnotation = "cleanup-e2e.io/resolve-again"

// resolveAgainEvery spaces the nudges of one Subscription.
const resolveAgainEvery = 30 * time.Second

var unreferencedCSV = regexp.MustCompile(`clusterserviceversion (\S+) exists and is not referenced by a subscription`)

// StaleResolution returns the CSVs a ResolutionFailed condition of sub names as existing and
// unreferenced although none of them exists any more; nil when the condition is absent, names none,
// or names one that still exists.
func StaleResolution(ctx context.Context, c client.Client, sub *operatorsv1alpha1.Subscription) ([]string, error) {
	cond := sub.Status.GetCondition(operatorsv1alpha1.SubscriptionResolutionFailed)
	if cond.Status != corev1.ConditionTrue || cond.Reason != "ConstraintsNotSatisfiable" {
		return nil, nil
	}
	var gone []string
	for _, m := range unreferencedCSV.FindAllStringSubmatch(cond.Message, -1) {
		err := c.Get(ctx, types.NamespacedName{Namespace: sub.Namespace, Name: m[1]}, &operatorsv1alpha1.ClusterServiceVersion{})
		switch {
		case isGone(err):
			gone = append(gone, m[1])
		case err != nil:
			return nil, fmt.Errorf("CSV %s/%s named by the ResolutionFailed condition of Subscription %s: %w", sub.Namespace, m[1], sub.Name, err)
		default:
			return nil, nil // a real conflict: the CSV is there
		}
	}
	return gone, nil
}

// resolveAgainIfStale makes OLM resolve sub's namespace again when its ResolutionFailed condition
// names only CSVs that are gone. It returns what it did (empty when nothing), for the wait's message.
func resolveAgainIfStale(ctx context.Context, c client.Client, sub *operatorsv1alpha1.Subscription) (string, error) {
	gone, err := StaleResolution(ctx, c, sub)
	if err != nil || len(gone) == 0 {
		return "", err
	}
	// The condition stays until a resolution succeeds, which can take a bundle unpack after the nudge
	// worked: ask again only when the last request is old.
	if last, err := time.Parse(time.RFC3339Nano, sub.GetAnnotations()[ResolveNudgeAnnotation]); err == nil && time.Since(last) < resolveAgainEvery {
		return fmt.Sprintf("OLM's resolution failed on CSVs already gone (%v); asked it to resolve again at %s", gone, last.Format(time.TimeOnly)), nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ResolveNudgeAnnotation, time.Now().UTC().Format(time.RFC3339Nano))
	if err := c.Patch(ctx, sub, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return "", fmt.Errorf("annotate Subscription %s/%s to make OLM resolve again: %w", sub.Namespace, sub.Name, err)
	}
	return fmt.Sprintf("OLM's resolution failed on CSVs already gone (%v), which it does not retry; annotated Subscription %s/%s (%s) so that it resolves again",
		gone, sub.Namespace, sub.Name, ResolveNudgeAnnotation), nil
}

// installPlanOf reports whether the InstallPlan ref points at installs csvName (false when unreadable).
func installPlanOf(ctx context.Context, c client.Client, ref *corev1.ObjectReference, csvName string) bool {
	ip := &operatorsv1alpha1.InstallPlan{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, ip); err != nil {
		return false
	}
	return slices.Contains(ip.Spec.ClusterServiceVersionNames, csvName)
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
