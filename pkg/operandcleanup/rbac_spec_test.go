package operandcleanup

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// olmClusterRBAC creates what OLM creates for a CSV's clusterPermissions: a ClusterRole and a binding to
// the operator's ServiceAccount, labelled olm.owner*. The role lets the operator manage widgets
// cluster-wide (what it needs to remove its finalizers).
func olmClusterRBAC(csv *v1alpha1.ClusterServiceVersion, sa string) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	labels := map[string]string{olmOwnerLabel: csv.Name, olmOwnerNamespaceLabel: csv.Namespace, olmOwnerKindLabel: olmOwnerKindCSV}
	role := &rbacv1.ClusterRole{}
	role.Name, role.Labels = csv.Namespace+"-"+csv.Name+"-operator", labels
	role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{testGroup}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch", "update", "patch"}}}
	Expect(tenv.admin.Create(ctx, role)).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{}
	binding.Name, binding.Labels = role.Name, labels
	binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
	binding.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: csv.Namespace}}
	Expect(tenv.admin.Create(ctx, binding)).To(Succeed())
	return role, binding
}

// simulateOLMDeletesRBAC does what OLM ≥0.27 does as soon as a CSV has a deletionTimestamp.
func simulateOLMDeletesRBAC(csv *v1alpha1.ClusterServiceVersion) {
	sel := client.MatchingLabels{olmOwnerLabel: csv.Name, olmOwnerNamespaceLabel: csv.Namespace, olmOwnerKindLabel: olmOwnerKindCSV}
	Expect(tenv.admin.DeleteAllOf(ctx, &rbacv1.ClusterRoleBinding{}, sel)).To(Succeed())
	Expect(tenv.admin.DeleteAllOf(ctx, &rbacv1.ClusterRole{}, sel)).To(Succeed())
}

func copiesOf(csv *v1alpha1.ClusterServiceVersion) func() ([]rbacv1.ClusterRole, []rbacv1.ClusterRoleBinding) {
	return func() ([]rbacv1.ClusterRole, []rbacv1.ClusterRoleBinding) {
		sel := client.MatchingLabels{RBACCopyForLabel: rbacCopyLabelValue(keyOf(csv))}
		roles, bindings := &rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}
		Expect(tenv.admin.List(ctx, roles, sel)).To(Succeed())
		Expect(tenv.admin.List(ctx, bindings, sel)).To(Succeed())
		return roles.Items, bindings.Items
	}
}

func copyCount(csv *v1alpha1.ClusterServiceVersion) func() int {
	return func() int { r, b := copiesOf(csv)(); return len(r) + len(b) }
}

// operatorReleases removes the finalizer of a widget as the operator's ServiceAccount.
func operatorReleases(c client.Client, u *unstructured.Unstructured) error {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), cur); err != nil {
		return err
	}
	cur.SetFinalizers(nil)
	return c.Update(ctx, cur)
}

var _ = Describe("operator permissions during cleanup", func() {
	It("keeps exact copies of the operator's cluster RBAC so its finalizers can run after OLM removed it", func() {
		ns, other := newNamespace("rbac"), newNamespace("rbac-other")
		Expect(tenv.admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operator"}})).To(Succeed())
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns+","+other), owns(widgetKind))
		role, binding := olmClusterRBAC(csv, "operator")

		Eventually(copyCount(csv)).Should(Equal(2))
		roles, bindings := copiesOf(csv)()
		Expect(roles[0].Name).To(Equal(RBACCopyNamePrefix + role.Name))
		Expect(roles[0].Rules).To(Equal(role.Rules), "same rules, never wider")
		Expect(bindings[0].Subjects).To(Equal(binding.Subjects))
		Expect(bindings[0].RoleRef.Name).To(Equal(roles[0].Name))
		Expect(roles[0].Labels).NotTo(HaveKey(olmOwnerLabel))

		By("copies follow changes of the source")
		role.Rules[0].Verbs = []string{"get", "list", "watch", "update"}
		Expect(tenv.admin.Update(ctx, role)).To(Succeed())
		Eventually(func() []string { r, _ := copiesOf(csv)(); return r[0].Rules[0].Verbs }).Should(Equal(role.Rules[0].Verbs))

		widgets := append(createOperands(widgetKind, ns, "w", 1, testFinalizer), createOperands(widgetKind, other, "w", 1, testFinalizer)...)
		operator, err := client.New(tenv.asServiceAccount(ns, "operator"), client.Options{Scheme: NewScheme()})
		Expect(err).NotTo(HaveOccurred())

		deleteCSV(csv)
		simulateOLMDeletesRBAC(csv)
		Eventually(allInState(widgets, "deleting")).Should(BeTrue())
		Expect(copyCount(csv)()).To(Equal(2), "copies survive OLM's RBAC removal")

		By("the operator still has its permissions and finishes its cleanup")
		Eventually(func() error { return operatorReleases(operator, widgets[0]) }).Should(Succeed())
		Eventually(func() error { return operatorReleases(operator, widgets[1]) }).Should(Succeed())
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
		Eventually(copyCount(csv)).Should(Equal(0))

		By("without the copies the operator has nothing left")
		Eventually(func() bool {
			return apierrors.IsForbidden(operator.Get(ctx, client.ObjectKeyFromObject(widgets[0]), newOperand(widgetKind, ns, "any")))
		}).Should(BeTrue())
	})

	It("removes the copies when cleanup is disabled and recreates them when enabled again", func() {
		ns := newNamespace("rbac-toggle")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		olmClusterRBAC(csv, "operator")
		Eventually(copyCount(csv)).Should(Equal(2))
		updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = false })
		Eventually(copyCount(csv)).Should(Equal(0))
		updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = true })
		Eventually(copyCount(csv)).Should(Equal(2))

		By("a deleted copy is restored; an object with a copy's name that is not ours is never touched")
		roles, _ := copiesOf(csv)()
		Expect(tenv.admin.Delete(ctx, &roles[0])).To(Succeed())
		Eventually(copyCount(csv)).Should(Equal(2))

		By("the copies go away with the CSV")
		deleteCSV(csv)
		simulateOLMDeletesRBAC(csv)
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
		Eventually(copyCount(csv)).Should(Equal(0))
	})

	It("removes copies left behind by a CSV that disappeared while the controller was down", func() {
		ns := newNamespace("rbac-orphan")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		olmClusterRBAC(csv, "operator")
		Eventually(copyCount(csv)).Should(Equal(2))
		restartController(func() {
			updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = nil })
			deleteCSV(csv)
			Eventually(csvGone(keyOf(csv))).Should(BeTrue())
		})
		Eventually(copyCount(csv)).Should(Equal(0))
	})
})
