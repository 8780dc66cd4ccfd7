package cleanup

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	stackfixture "github.com/cleanup-e2e/cleanup-e2e/fixtures/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/hold"
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
			// DeleteSelf waits longer than any spec: the spec ends the wait (selfDeletionDelay: 0s) once it
			// has seen the CSV list the Stack in that phase. Children go at once unless the spec holds one.
			Spec: fixturesv1alpha1.StackSpec{Children: ptr.To[int32](2),
				SelfDeletionDelay: &metav1.Duration{Duration: time.Hour}},
		})}
	},
	Reconciled: stackfixture.Reconciled,
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

		// Each phase lasts until the spec has seen the CSV list the Stack during it: a child held by the
		// spec keeps DeleteChildren going, the hour-long selfDeletionDelay keeps DeleteSelf going. (Fixed
		// delays of 3 and 4 s raced the controller's status writes on a loaded machine.)
		children := &fixturesv1alpha1.StackChildList{}
		Expect(k8s.List(ctx, children, client.InNamespace(stack.Namespace))).To(Succeed())
		Expect(children.Items).NotTo(BeEmpty(), "stack-operator should have made the Stack's children")
		held := toUnstructured(&children.Items[0])
		Expect(hold.Put(ctx, k8s, held)).To(Succeed())
		DeferCleanup(func(ctx context.Context) error { return hold.Release(ctx, k8s, held) })

		r.Uninstall(ctx)
		listedIn := func(phase fixturesv1alpha1.DeletionPhase) {
			GinkgoHelper()
			var pending []matchers.PendingEntry
			Eventually(func(g Gomega) {
				g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(stack), stack)).To(Succeed())
				g.Expect(stack.Status.DeletionPhase).To(Equal(phase), "the Stack's deletion phase")
				csv, err := r.LiveCSV(ctx)()
				g.Expect(err).NotTo(HaveOccurred())
				pending = matchers.PendingEntries(csv.Status.Cleanup.PendingDeletion)
				g.Expect(pending).To(ContainElement(stackEntry))
			}).WithContext(ctx).Should(Succeed(),
				func() string {
					return fmt.Sprintf("the CSV must list Stack %s/%s as pending while it is in phase %s; the Stack is in phase %q, the CSV lists %v",
						stack.Namespace, stack.Name, phase, stack.Status.DeletionPhase, pending)
				})
		}
		By("seeing the CSV list the Stack while it deletes its children (one held by the spec)")
		listedIn(fixturesv1alpha1.DeletionPhaseDeleteChildren)
		Expect(hold.Release(ctx, k8s, held)).To(Succeed())
		By("seeing the CSV list the Stack while it deletes itself, then ending that phase's wait")
		listedIn(fixturesv1alpha1.DeletionPhaseDeleteSelf)
		Expect(stack.Status.PhasesEntered()).To(Equal([]fixturesv1alpha1.DeletionPhase{
			fixturesv1alpha1.DeletionPhaseDeleteChildren, fixturesv1alpha1.DeletionPhaseDeleteSelf}), "phases in order")
		Expect(k8s.Patch(ctx, stack, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"selfDeletionDelay":"0s"}}`)))).To(Succeed())

		r.ExpectRemoved(ctx, stacks)
		r.ExpectUninstalled(ctx)
		Expect(k8s.List(ctx, children, client.InNamespace(stack.Namespace))).To(Succeed())
		Expect(children.Items).To(BeEmpty(), "stack-operator's DeleteChildren should have removed every child")
	})
})
