package cleanup

import (
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/framework/matchers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

var stackOperator = specs.OperandCleanupSpecInput{
	Environment: clusterUnderTest,
	Name:        "stack-operator",
	BundleDir:   bundles.Dir("stack-operator", "v0.1.0"),
	Samples: func(string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{toUnstructured(&fixturesv1alpha1.Stack{
			ObjectMeta: metav1.ObjectMeta{Name: "sample"},
			Spec: fixturesv1alpha1.StackSpec{Children: ptr.To[int32](2),
				ChildDeletionDelay: &metav1.Duration{Duration: 3 * time.Second},
				SelfDeletionDelay:  &metav1.Duration{Duration: 4 * time.Second}},
		})}
	},
	Reconciled: func(ctx context.Context, c client.Client, s *unstructured.Unstructured) error {
		st := &fixturesv1alpha1.Stack{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), st); err != nil {
			return err
		}
		if st.Status.Children != 2 || !slices.Contains(st.Finalizers, fixturesv1alpha1.StackFinalizer) {
			return errNotYet("stack %s has %d children and finalizers %v", st.Name, st.Status.Children, st.Finalizers)
		}
		return nil
	},
}

var _ = Describe("Operand cleanup of an operator with phased deletion", Label("operand-cleanup", "phased-deletion"), func() {
	It("lists the Stack as pending while its deletion walks DeleteChildren then DeleteSelf", func(ctx context.Context) {
		r := specs.NewInstallation(ctx, stackOperator, operatorsv1alpha1.InstallModeTypeOwnNamespace)
		r.Install(ctx, stackOperator.BundleDir, ptr.To(true))
		r.CreateOperands(ctx)
		stacks, _ := r.Operands(r.WatchedNamespaces(), false)
		stack := &fixturesv1alpha1.Stack{}
		stack.Namespace, stack.Name = stacks[0].GetNamespace(), stacks[0].GetName()
		stackEntry := matchers.PendingEntry{Group: fixturesv1alpha1.GroupVersion.Group, Kind: "Stack", Namespace: stack.Namespace, Name: stack.Name}

		r.Uninstall(ctx)
		By("watching the phases while the CSV lists the Stack as pending deletion")
		// The controller writes the CSV's status at most every few seconds, so for each phase the
		// Stack must be listed at some point while it is in that phase, not at the instant it enters it.
		var seen []fixturesv1alpha1.DeletionPhase
		listedDuring := map[fixturesv1alpha1.DeletionPhase]bool{}
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(stack), stack)).To(Succeed())
			p := stack.Status.DeletionPhase
			g.Expect(p).NotTo(BeEmpty(), "the Stack has not started deleting yet")
			if len(seen) == 0 || seen[len(seen)-1] != p {
				seen = append(seen, p)
			}
			if csv, err := r.LiveCSV(ctx)(); err == nil && slices.Contains(matchers.PendingEntries(csv.Status.Cleanup.PendingDeletion), stackEntry) {
				listedDuring[p] = true
			}
			g.Expect(listedDuring).To(HaveKey(fixturesv1alpha1.DeletionPhaseDeleteSelf))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		Expect(seen).To(Equal([]fixturesv1alpha1.DeletionPhase{
			fixturesv1alpha1.DeletionPhaseDeleteChildren, fixturesv1alpha1.DeletionPhaseDeleteSelf}), "phases in order")
		Expect(listedDuring).To(HaveKey(fixturesv1alpha1.DeletionPhaseDeleteChildren),
			"the CSV must list the Stack as pending while it deletes its children")

		r.ExpectRemoved(ctx, stacks)
		r.ExpectUninstalled(ctx)
		children := &fixturesv1alpha1.StackChildList{}
		Expect(k8s.List(ctx, children, client.InNamespace(stack.Namespace))).To(Succeed())
		Expect(children.Items).To(BeEmpty())
	})
})
