package cleanup

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

var _ = Describe("Two installations of the same operator", Label("operand-cleanup", "two-installations"), func() {
	It("cleans up one installation and leaves the other's operands and operator alone", func(ctx context.Context) {
		first := specs.NewInstallation(ctx, widgetOperator, operatorsv1alpha1.InstallModeTypeSingleNamespace)
		second := specs.NewInstallation(ctx, widgetOperator, operatorsv1alpha1.InstallModeTypeSingleNamespace)
		first.Install(ctx, widgetOperator.BundleDir, ptr.To(true))
		second.Install(ctx, widgetOperator.BundleDir, ptr.To(true))
		first.CreateOperands(ctx)
		second.CreateOperands(ctx)
		removed, _ := first.Operands(first.WatchedNamespaces(), false)

		first.Uninstall(ctx)
		first.ExpectRemoved(ctx, removed)
		first.ExpectUninstalled(ctx)

		By("checking the second installation: its operands, its finalizer and its phase are untouched")
		second.ExpectKept(ctx, mustOperands(second))
		Expect(second.LiveCSV(ctx)()).To(And(matchers.HavePhase(operatorsv1alpha1.CSVPhaseSucceeded),
			matchers.HaveFinalizer(specs.CleanupFinalizer)))
	})
})

func mustOperands(r *specs.Installation) []*unstructured.Unstructured {
	in, out := r.Operands(nil, false)
	return append(in, out...)
}
