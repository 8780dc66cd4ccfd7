package operandcleanup

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func olmOwnerLabels(ns, csv string) map[string]string {
	return map[string]string{olmOwnerLabel: csv, olmOwnerNamespaceLabel: ns, olmOwnerKindLabel: olmOwnerKindCSV}
}

// olmClusterRBAC creates what OLM creates for a CSV's clusterPermissions (and, with the same labels, for
// the namespaced permissions of an AllNamespaces operator): a ClusterRole and a binding to the operator's
// ServiceAccount, labelled olm.owner*. The role lets the operator manage widgets cluster-wide (what it
// needs to remove its finalizers).
func olmClusterRBAC(csv *v1alpha1.ClusterServiceVersion, sa string) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	return labelledClusterRBAC(csv.Namespace+"-"+csv.Name+"-operator", olmOwnerLabels(csv.Namespace, csv.Name), csv.Namespace, sa)
}

func labelledClusterRBAC(name string, labels map[string]string, saNS, sa string, finalizers ...string) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := &rbacv1.ClusterRole{}
	role.Name, role.Labels, role.Finalizers = name, labels, finalizers
	role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{testGroup}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch", "update", "patch"}}}
	Expect(tenv.admin.Create(ctx, role)).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{}
	binding.Name, binding.Labels, binding.Finalizers = name, labels, finalizers
	binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
	binding.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: saNS}}
	Expect(tenv.admin.Create(ctx, binding)).To(Succeed())
	return role, binding
}

// simulateOLMDeletesRBAC does what OLM ≥0.27 does as soon as a CSV has a deletionTimestamp.
func simulateOLMDeletesRBAC(csv *v1alpha1.ClusterServiceVersion) {
	sel := client.MatchingLabels(olmOwnerLabels(csv.Namespace, csv.Name))
	Expect(tenv.admin.DeleteAllOf(ctx, &rbacv1.ClusterRoleBinding{}, sel)).To(Succeed())
	Expect(tenv.admin.DeleteAllOf(ctx, &rbacv1.ClusterRole{}, sel)).To(Succeed())
}

// rbacState is "absent", "present", "held" (our finalizer), "deleting" or "held+deleting" for each object.
func rbacState(objs ...client.Object) func() []string {
	return func() []string {
		var out []string
		for _, o := range objs {
			cur := o.DeepCopyObject().(client.Object)
			if err := tenv.admin.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
				Expect(apierrors.IsNotFound(err)).To(BeTrue())
				out = append(out, "absent")
				continue
			}
			s := "present"
			if hasRBACFinalizer(cur) {
				s = "held"
			}
			if cur.GetDeletionTimestamp() != nil {
				if s == "held" {
					s += "+deleting"
				} else {
					s = "deleting"
				}
			}
			out = append(out, s)
		}
		return out
	}
}

func hasRBACFinalizer(o client.Object) bool {
	for _, f := range o.GetFinalizers() {
		if f == RBACFinalizer {
			return true
		}
	}
	return false
}

func all(state string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = state
	}
	return out
}

// clusterRBACNames lists every ClusterRole and ClusterRoleBinding in the cluster.
func clusterRBACNames() []string {
	roles, bindings := &rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}
	Expect(tenv.admin.List(ctx, roles)).To(Succeed())
	Expect(tenv.admin.List(ctx, bindings)).To(Succeed())
	var out []string
	for _, r := range roles.Items {
		out = append(out, "ClusterRole/"+r.Name)
	}
	for _, b := range bindings.Items {
		out = append(out, "ClusterRoleBinding/"+b.Name)
	}
	return out
}

// saMay asks the API server's authorizer (SubjectAccessReview) whether a ServiceAccount may do attrs.
func saMay(ns, sa string, attrs authorizationv1.ResourceAttributes) func() bool {
	return func() bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               "system:serviceaccount:" + ns + ":" + sa,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &attrs,
		}}
		Expect(tenv.admin.Create(ctx, sar)).To(Succeed())
		return sar.Status.Allowed
	}
}

func mayUpdateWidgets(ns, sa, in string) func() bool {
	return saMay(ns, sa, authorizationv1.ResourceAttributes{Namespace: in, Verb: "update", Group: testGroup, Resource: "widgets"})
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
	It("holds OLM's cluster RBAC for the CSV with a finalizer, so it stays effective after OLM deleted it, until the cleanup completes", func() {
		before := clusterRBACNames()
		ns, other := newNamespace("rbac"), newNamespace("rbac-other")
		Expect(tenv.admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operator"}})).To(Succeed())
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns+","+other), owns(widgetKind))
		role, binding := olmClusterRBAC(csv, "operator")
		Eventually(rbacState(role, binding)).Should(Equal(all("held", 2)))
		Eventually(mayUpdateWidgets(ns, "operator", other)).Should(BeTrue())

		widgets := append(createOperands(widgetKind, ns, "w", 1, testFinalizer), createOperands(widgetKind, other, "w", 1, testFinalizer)...)
		operator, err := client.New(tenv.asServiceAccount(ns, "operator"), client.Options{Scheme: NewScheme()})
		Expect(err).NotTo(HaveOccurred())

		deleteCSV(csv)
		simulateOLMDeletesRBAC(csv)
		Eventually(allInState(widgets, "deleting")).Should(BeTrue())
		Expect(rbacState(role, binding)()).To(Equal(all("held+deleting", 2)), "OLM's deletion waits for the cleanup")

		By("the authorizer still honours the deleted-but-held RBAC: the operator finishes its cleanup as itself")
		Consistently(mayUpdateWidgets(ns, "operator", other)).Should(BeTrue())
		Expect(saMay(ns, "operator", authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "create", Resource: "secrets"})()).
			To(BeFalse(), "nothing is granted beyond what OLM made")
		Expect(operatorReleases(operator, widgets[0])).To(Succeed())
		Expect(operatorReleases(operator, widgets[1])).To(Succeed())
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())

		By("released with the cleanup: OLM's deletion completes and the operator has nothing left")
		Eventually(rbacState(role, binding)).Should(Equal(all("absent", 2)))
		Eventually(mayUpdateWidgets(ns, "operator", other)).Should(BeFalse())
		Eventually(func() bool {
			return apierrors.IsForbidden(operator.Get(ctx, client.ObjectKeyFromObject(widgets[0]), newOperand(widgetKind, ns, "any")))
		}).Should(BeTrue())
		Expect(clusterRBACNames()).To(ConsistOf(before), "no RBAC object was ever created")
	})

	It("releases the RBAC when cleanup is disabled, holds it again when re-enabled, and releases it on abort", func() {
		ns := newNamespace("rbac-toggle")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		role, binding := olmClusterRBAC(csv, "operator")
		Eventually(rbacState(role, binding)).Should(Equal(all("held", 2)))
		updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = false })
		Eventually(rbacState(role, binding)).Should(Equal(all("present", 2)))
		updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = true })
		Eventually(rbacState(role, binding)).Should(Equal(all("held", 2)))

		By("a ClusterRole OLM adds later (e.g. lifted from namespaced permissions for AllNamespaces) is held too")
		lifted, liftedBinding := labelledClusterRBAC(ns+"-lifted", olmOwnerLabels(ns, csv.Name), ns, "operator")
		Eventually(rbacState(lifted, liftedBinding)).Should(Equal(all("held", 2)))

		widgets := createOperands(widgetKind, ns, "w", 1, testFinalizer)
		deleteCSV(csv)
		simulateOLMDeletesRBAC(csv)
		Eventually(allInState(widgets, "deleting")).Should(BeTrue())
		Expect(rbacState(role, binding, lifted, liftedBinding)()).To(Equal(all("held+deleting", 4)))

		By("aborting the cleanup releases them")
		updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = false })
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
		Eventually(rbacState(role, binding, lifted, liftedBinding)).Should(Equal(all("absent", 4)))
		expectAll(widgets, "deleting")
		releaseOperands(widgets...)
	})

	It("releases the replaced CSV's RBAC on upgrade so OLM can delete it, and holds the successor's", func() {
		ns := newNamespace("rbac-upgrade")
		v1 := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		r1, b1 := olmClusterRBAC(v1, "operator")
		Eventually(rbacState(r1, b1)).Should(Equal(all("held", 2)))
		widgets := createOperands(widgetKind, ns, "w", 1, testFinalizer)

		v2 := createCSVWithStatus(ns, "op.v2", v1alpha1.CSVPhasePending, v1alpha1.CSVReasonRequirementsUnknown,
			targetNamespaces(ns), owns(widgetKind), replaces("op.v1"))
		r2, b2 := olmClusterRBAC(v2, "operator")
		Eventually(rbacState(r1, b1, r2, b2)).Should(Equal([]string{"present", "present", "held", "held"}))

		setPhase(v1, v1alpha1.CSVPhaseDeleting, v1alpha1.CSVReasonReplaced)
		deleteCSV(v1)
		simulateOLMDeletesRBAC(v1)
		Eventually(csvGone(keyOf(v1))).Should(BeTrue())
		Expect(rbacState(r1, b1, r2, b2)()).To(Equal([]string{"absent", "absent", "held", "held"}))
		expectAll(widgets, "present")

		By("the head of the chain keeps its RBAC through its own cleanup")
		deleteCSV(v2)
		simulateOLMDeletesRBAC(v2)
		Eventually(allInState(widgets, "deleting")).Should(BeTrue())
		Expect(rbacState(r2, b2)()).To(Equal(all("held+deleting", 2)))
		releaseOperands(widgets...)
		Eventually(csvGone(keyOf(v2))).Should(BeTrue())
		Eventually(rbacState(r2, b2)).Should(Equal(all("absent", 2)))
	})

	It("never holds RBAC made for another CSV: same name in another namespace, other owner kinds", func() {
		nsA, nsB, nsC := newNamespace("rbac-twin-a"), newNamespace("rbac-twin-b"), newNamespace("rbac-twin-c")
		csvA := createCSV(nsA, "op.v1", cleanupEnabled(true), targetNamespaces(nsA), owns(widgetKind))
		createCSV(nsB, "op.v1", targetNamespaces(nsB), owns(widgetKind)) // same name, no opt-in
		rA, bA := olmClusterRBAC(csvA, "operator")
		rB, bB := labelledClusterRBAC(nsB+"-op.v1-operator", olmOwnerLabels(nsB, "op.v1"), nsB, "operator")
		rC, bC := labelledClusterRBAC(nsC+"-op.v1-operator", olmOwnerLabels(nsC, "op.v1"), nsC, "operator") // no CSV there
		ogLabels := map[string]string{olmOwnerLabel: "op.v1", olmOwnerNamespaceLabel: nsA, olmOwnerKindLabel: "OperatorGroup"}
		rOG, bOG := labelledClusterRBAC(nsA+"-og-admin", ogLabels, nsA, "operator")

		Eventually(rbacState(rA, bA)).Should(Equal(all("held", 2)))
		Consistently(rbacState(rB, bB, rC, bC, rOG, bOG)).Should(Equal(all("present", 6)))

		deleteCSV(csvA)
		simulateOLMDeletesRBAC(csvA)
		Eventually(csvGone(keyOf(csvA))).Should(BeTrue())
		Eventually(rbacState(rA, bA)).Should(Equal(all("absent", 2)))
		Expect(rbacState(rB, bB, rC, bC, rOG, bOG)()).To(Equal(all("present", 6)))
	})

	It("sweeps finalizers left behind while the controller was down: CSV gone, opt-in withdrawn, labels gone", func() {
		ns, ns2 := newNamespace("rbac-orphan"), newNamespace("rbac-orphan-2")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		kept := createCSV(ns2, "op.v1", cleanupEnabled(true), targetNamespaces(ns2), owns(widgetKind))
		role, binding := olmClusterRBAC(csv, "operator")
		r2, b2 := olmClusterRBAC(kept, "operator")
		Eventually(rbacState(role, binding, r2, b2)).Should(Equal(all("held", 4)))
		var ghost, ghostBinding, unlabelled, unlabelledBinding client.Object
		restartController(func() {
			updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = nil })
			deleteCSV(csv)
			Eventually(csvGone(keyOf(csv))).Should(BeTrue())
			simulateOLMDeletesRBAC(csv)
			updateCSV(keyOf(kept), func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = false })
			// Held objects whose CSV never existed, and whose labels were removed.
			ghost, ghostBinding = labelledClusterRBAC(ns+"-ghost", olmOwnerLabels(ns, "never.v0"), ns, "operator", RBACFinalizer)
			unlabelled, unlabelledBinding = labelledClusterRBAC(ns+"-unlabelled", map[string]string{"x": "y"}, ns, "operator", RBACFinalizer)
		})
		Eventually(rbacState(role, binding)).Should(Equal(all("absent", 2)))
		Eventually(rbacState(r2, b2, ghost, ghostBinding, unlabelled, unlabelledBinding)).Should(Equal(all("present", 6)))
	})
})
