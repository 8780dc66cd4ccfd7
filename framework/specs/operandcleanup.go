package specs

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/hold"
	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// OperandCleanupSpec declares the documented operand-cleanup cases for one operator: cleanup unset,
// disabled (also after an opt-in), enabled in each install mode (operands outside the targets
// untouched, and nothing else left behind: see ExpectNoLeftovers), the pending-deletion listing (also
// past its cap), abort, and — with upgrade bundles — upgrades that never clean up. Every spec makes its
// own namespaces, so they run in parallel and in random order; every spec running in AllNamespaces
// mode is Serial because its cleanup is cluster-wide (ModeDecorators).
func OperandCleanupSpec(ctx context.Context, in OperandCleanupSpecInput) bool {
	if err := in.defaults(); err != nil {
		panic(err)
	}
	first := in.InstallModes[0]
	return Describe(fmt.Sprintf("Operand cleanup of %s", in.Name), Label("operand-cleanup", in.Name), func() {
		It("keeps every operand when spec.cleanup is unset", ModeDecorators(first, Label("cleanup-unset"), func(ctx context.Context) {
			r := NewInstallation(ctx, in, first)
			r.Install(ctx, in.BundleDir, nil)
			Expect(r.csv).To(matchers.HaveCleanupEnabled(false), "the bundle must leave spec.cleanup as the SDK generates it")
			r.CreateOperands(ctx)
			r.Uninstall(ctx)
			r.ExpectUninstalled(ctx)
			r.ExpectKept(ctx, r.ops.items)
		})...)

		It("keeps every operand when cleanup was opted in and then out", ModeDecorators(first, Label("cleanup-disabled"), func(ctx context.Context) {
			r := NewInstallation(ctx, in, first)
			r.Install(ctx, in.BundleDir, ptr.To(true))
			r.CreateOperands(ctx)
			r.SetCleanup(ctx, false)
			r.ExpectCleanupFinalizer(ctx, false)
			r.Uninstall(ctx)
			r.ExpectUninstalled(ctx)
			r.ExpectKept(ctx, r.ops.items)
		})...)

		cleanupEnabledCases(in)

		It("lists the operands pending deletion and shrinks the list as they go", ModeDecorators(first, Label("cleanup-pending"), func(ctx context.Context) {
			r := NewInstallation(ctx, in, first)
			r.Install(ctx, in.BundleDir, ptr.To(true))
			r.CreateOperands(ctx)
			held, _ := r.ops.where(r.WatchedNamespaces(), r.Global())
			for _, o := range held {
				r.Hold(ctx, o)
			}
			r.Uninstall(ctx)
			r.ExpectPending(ctx, held)
			for len(held) > 0 {
				By(fmt.Sprintf("releasing %s %s", held[0].GetKind(), describeKey(held[0])))
				r.Release(ctx, held[0])
				held = held[1:]
				r.ExpectPending(ctx, held)
			}
			r.ExpectUninstalled(ctx)
		})...)

		It("caps the pending list and says how many operands remain", ModeDecorators(first, Label("cleanup-pending", "cleanup-cap"), func(ctx context.Context) {
			r := NewInstallation(ctx, in, first)
			r.Install(ctx, in.BundleDir, ptr.To(true))
			target := r.WatchedNamespaces()[0]
			many := func(ns string) []*unstructured.Unstructured {
				base := in.Samples(ns)[0]
				out := make([]*unstructured.Unstructured, in.PendingListCap+20)
				for i := range out {
					out[i] = base.DeepCopy()
					out[i].SetName(fmt.Sprintf("%s-%03d", base.GetName(), i))
					out[i].SetFinalizers(append(out[i].GetFinalizers(), hold.Finalizer))
				}
				return out
			}
			r.ops = createSamples(ctx, r.c, many, target)
			total := len(r.ops.items)
			r.Uninstall(ctx)
			Eventually(r.LiveCSV(ctx)).WithContext(ctx).WithTimeout(in.Timeout).Should(And(
				matchers.HavePhase(PhaseCleanup, ReasonWaitingOnCleanup),
				matchers.HavePendingCount(in.PendingListCap),
				matchers.HaveCondition(PhaseCleanup, ReasonWaitingOnCleanup, fmt.Sprintf("waiting for operator to finish cleanup for %d CRs", total)),
			))
			for _, o := range r.ops.items {
				r.Release(ctx, o)
			}
			r.ExpectUninstalled(ctx)
		})...)

		It("aborts a stuck cleanup when spec.cleanup.enabled is set to false", ModeDecorators(first, Label("cleanup-abort"), func(ctx context.Context) {
			r := NewInstallation(ctx, in, first)
			r.Install(ctx, in.BundleDir, ptr.To(true))
			r.CreateOperands(ctx)
			watched, _ := r.ops.where(r.WatchedNamespaces(), r.Global())
			stuck := watched[0]
			r.Hold(ctx, stuck)
			r.Uninstall(ctx)
			r.ExpectPending(ctx, []*unstructured.Unstructured{stuck})
			r.SetCleanup(ctx, false)
			r.ExpectUninstalled(ctx)
			r.ExpectKept(ctx, []*unstructured.Unstructured{stuck})
		})...)

		if len(in.UpgradeBundleDirs) > 0 {
			It("never cleans up on upgrade and carries the opt-in to each new version", ModeDecorators(first, Label("cleanup-upgrade"), func(ctx context.Context) {
				r := NewInstallation(ctx, in, first)
				r.Install(ctx, in.BundleDir, ptr.To(true))
				r.CreateOperands(ctx)
				for _, next := range in.UpgradeBundleDirs {
					r.Upgrade(ctx, next)
					Eventually(r.LiveCSV(ctx)).WithContext(ctx).WithTimeout(in.Timeout).Should(And(
						matchers.HaveCleanupEnabled(true), matchers.HaveFinalizer(CleanupFinalizer)))
					r.ExpectKept(ctx, r.ops.items)
				}
				removed, kept := r.ops.where(r.WatchedNamespaces(), r.Global())
				r.Uninstall(ctx)
				r.ExpectRemoved(ctx, removed)
				r.ExpectUninstalled(ctx)
				r.ExpectKept(ctx, kept)
			})...)
		}
	})
}

// CleanupEnabledSpec declares only the cleanup-enabled cases of OperandCleanupSpec (one spec per
// install mode, each with the leftovers check unless in.SkipLeftoversCheck): for an operator repo that
// wants the core guarantee without the whole matrix, or a second input (e.g. an operand variant).
func CleanupEnabledSpec(ctx context.Context, in OperandCleanupSpecInput) bool {
	if err := in.defaults(); err != nil {
		panic(err)
	}
	return Describe(fmt.Sprintf("Cleanup-enabled uninstall of %s", in.Name), Label("operand-cleanup", in.Name), func() {
		cleanupEnabledCases(in)
	})
}

// cleanupEnabledCases: per install mode, cleanup removes the operands it watches, leaves the others,
// and the operator leaves nothing else behind (framework/leftovers).
func cleanupEnabledCases(in OperandCleanupSpecInput) {
	for _, mode := range in.InstallModes {
		decorators := ModeDecorators(mode, Label("cleanup-enabled"))
		if !in.SkipLeftoversCheck {
			decorators = append(decorators, Label("leftovers"))
		}
		It(fmt.Sprintf("removes the operands in the target namespaces and nothing else [%s]", mode), append(decorators, func(ctx context.Context) {
			r := NewInstallation(ctx, in, mode)
			if !in.SkipLeftoversCheck {
				r.SnapshotBeforeInstall(ctx)
			}
			r.Install(ctx, in.BundleDir, ptr.To(true))
			r.CreateOperands(ctx)
			removed, kept := r.ops.where(r.WatchedNamespaces(), r.Global())
			Expect(removed).NotTo(BeEmpty(), "the samples must give cleanup something to remove")
			r.Uninstall(ctx)
			r.ExpectRemoved(ctx, removed)
			r.ExpectUninstalled(ctx)
			r.ExpectKept(ctx, kept)
			if !in.SkipLeftoversCheck {
				r.ExpectNoLeftovers(ctx)
			}
		})...)
	}
}

func (r *Installation) LiveCSV(ctx context.Context) func() (*operatorsv1alpha1.ClusterServiceVersion, error) {
	return func() (*operatorsv1alpha1.ClusterServiceVersion, error) {
		return olm.GetCSV(ctx, r.c, r.csv.Namespace, r.csv.Name)
	}
}

// expectPending waits until the CSV is in the Cleanup phase listing exactly these operands, with the
// count in its condition message; with none left, until the CSV is gone.
func (r *Installation) ExpectPending(ctx context.Context, objs []*unstructured.Unstructured) {
	if len(objs) == 0 {
		return
	}
	var want []matchers.PendingEntry
	for _, o := range objs {
		want = append(want, matchers.PendingEntry{Group: o.GroupVersionKind().Group, Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()})
	}
	Eventually(r.LiveCSV(ctx)).WithContext(ctx).WithTimeout(r.in.Timeout).Should(And(
		matchers.HavePhase(PhaseCleanup, ReasonWaitingOnCleanup),
		matchers.HavePendingDeletion(want...),
		matchers.HaveCondition(PhaseCleanup, ReasonWaitingOnCleanup, fmt.Sprintf("waiting for operator to finish cleanup for %d CRs", len(objs))),
	))
}
