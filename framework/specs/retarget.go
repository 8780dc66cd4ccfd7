package specs

import (
	"context"
	"slices"

	. "github.com/onsi/gomega"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// retargetCase: the OperatorGroup drops a target namespace while the cleanup waits for a CR it deleted
// there. OLM rewrites the deleted CSV's olm.targetNamespaces but not its Deployment, so the operator
// still watches that namespace and is the only one who can finalize the CR: the CSV (and the operator)
// must stay until the CR is gone. Only for operators that support MultiNamespace (two targets).
func retargetCase(in OperandCleanupSpecInput) []Case {
	mode := operatorsv1alpha1.InstallModeTypeMultiNamespace
	if !slices.Contains(in.InstallModes, mode) {
		return nil
	}
	return []Case{{Name: "finishes the CRs it deleted when the OperatorGroup drops their namespace mid-cleanup", Mode: mode,
		Labels: []string{"cleanup-retarget"},
		Run: func(ctx context.Context, t T) {
			r := NewInstallationFor(ctx, t, in, mode)
			r.Install(ctx, in.BundleDir, ptr.To(true))
			r.CreateOperands(ctx)
			targets := r.WatchedNamespaces()
			kept, dropped := targets[:1], targets[1]
			held, _ := r.ops.where([]string{dropped}, false)
			r.g.Expect(held).NotTo(BeEmpty(), "the samples must give the cleanup something to delete in %s", dropped)
			for _, o := range held {
				r.Hold(ctx, o)
			}
			r.Uninstall(ctx)
			r.ExpectPending(ctx, held)

			t.Step("the OperatorGroup drops " + dropped + " while its CRs wait for their finalizers")
			r.g.Expect(olm.SetOperatorGroupTargets(ctx, r.c, r.l.operator, kept)).To(Succeed())
			targetsOf := func(c *operatorsv1alpha1.ClusterServiceVersion) string {
				return c.GetAnnotations()[operatorsv1.OperatorGroupTargetsAnnotationKey]
			}
			r.g.Eventually(r.LiveCSV(ctx)).WithContext(ctx).WithTimeout(r.within(r.in.Timeout)).Should(
				WithTransform(targetsOf, Equal(kept[0])),
				"OLM rewrites the deleted CSV's %s when its OperatorGroup changes", operatorsv1.OperatorGroupTargetsAnnotationKey)
			r.g.Consistently(r.LiveCSV(ctx)).WithContext(ctx).WithTimeout(intervals.Get(intervals.Quiet)).Should(
				matchers.HavePendingDeletion(pendingEntries(held)...),
				"the cleanup let the operator go while the CRs it deleted in %s still waited for its finalizer: nobody would remove them", dropped)
			for _, o := range held {
				r.Release(ctx, o)
			}
			r.ExpectUninstalled(ctx)
		}}}
}
