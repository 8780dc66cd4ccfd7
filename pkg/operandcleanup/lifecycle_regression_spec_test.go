package operandcleanup

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
)

// Regression specs for lifecycle races, one per reported case; each fails on a controller without the
// rule it pins.
var _ = Describe("lifecycle regressions", func() {
	It("case 1: deleting a pending successor while its predecessor still runs deletes nothing", func() {
		_, _, _, v2, widgets := midUpgrade("succ-deleted")
		Eventually(csvFinalizers(keyOf(v2))).Should(ContainElement(Finalizer), "v2 inherited the opt-in")
		deleteCSV(v2)
		Eventually(csvGone(keyOf(v2))).Should(BeTrue())
		Consistently(allInState(widgets, "present")).Should(BeTrue(), "the Widgets of the still-installed v1 must stay")
		Eventually(csvEvents(v2)).Should(ContainElement(And(HavePrefix(EventReasonSkipped), ContainSubstring("op.v1"))))
	})

	It("case 2: the opt-in survives a deleted successor and reaches the next upgrades", func() {
		ns, opts, v1, v2, widgets := midUpgrade("optin-kept")
		Eventually(cleanupEnabledOf(keyOf(v2))).Should(BeTrue())
		deleteCSV(v2)
		Eventually(csvGone(keyOf(v2))).Should(BeTrue())
		Expect(cleanupEnabledOf(keyOf(v1))()).To(BeTrue(), "v1 keeps the user's opt-in")
		By("v1 stays Replacing in OLM but is the whole installation again: it holds the finalizer again")
		Eventually(csvFinalizers(keyOf(v1))).Should(ContainElement(Finalizer))

		By("the upgrade is retried: v2 again, then v3, each inherits the opt-in")
		v2 = createCSVWithStatus(ns, "op.v2", v1alpha1.CSVPhasePending, v1alpha1.CSVReasonRequirementsUnknown, append(opts, replaces("op.v1"))...)
		Eventually(cleanupEnabledOf(keyOf(v2))).Should(BeTrue())
		setPhase(v2, v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonInstallSuccessful)
		setPhase(v1, v1alpha1.CSVPhaseDeleting, v1alpha1.CSVReasonReplaced)
		deleteCSV(v1)
		Eventually(csvGone(keyOf(v1))).Should(BeTrue())
		v3 := createCSVWithStatus(ns, "op.v3", v1alpha1.CSVPhasePending, v1alpha1.CSVReasonRequirementsUnknown, append(opts, replaces("op.v2"))...)
		Eventually(cleanupEnabledOf(keyOf(v3))).Should(BeTrue())
		setPhase(v3, v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonInstallSuccessful)
		setPhase(v2, v1alpha1.CSVPhaseDeleting, v1alpha1.CSVReasonReplaced)
		deleteCSV(v2)
		Eventually(csvGone(keyOf(v2))).Should(BeTrue())
		expectAll(widgets, "present")

		By("uninstalling v3 cleans up")
		Eventually(csvFinalizers(keyOf(v3))).Should(ContainElement(Finalizer))
		deleteCSV(v3)
		Eventually(allInState(widgets, "absent")).Should(BeTrue())
	})

	It("case 3: holds the operator's Roles in its target namespaces, and says so when its Deployment is gone", func() {
		ns, target := newNamespace("gone-op"), newNamespace("gone-target")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(target), owns(widgetKind))
		role, binding := olmTargetRBAC(csv, target)
		Eventually(rbacState(role, binding)).Should(Equal(all("held", 2)), "target-namespace RBAC held while cleanup is enabled")
		dep := operatorDeployment(ns)
		widgets := createOperands(widgetKind, target, "w", 2, testFinalizer)

		deleteCSV(csv)
		Eventually(allInState(widgets, "deleting")).Should(BeTrue())
		By("the operator's Deployment is deleted (its namespace went, or someone removed it)")
		Expect(tenv.admin.Delete(ctx, dep)).To(Succeed())
		Eventually(reasonOf(keyOf(csv))).Should(Equal(ReasonOperatorGone))
		Expect(getCSV(keyOf(csv)).Status.Message).To(And(ContainSubstring("Deployment "+ns+"/operator is gone"), ContainSubstring("2 CRs")))
		Eventually(csvEvents(csv)).Should(ContainElement(HavePrefix(EventReasonOperatorGone)))
		Expect(rbacState(role, binding)()).To(Equal(all("held", 2)), "still held: the cleanup is not over")

		releaseOperands(widgets...)
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
		Eventually(rbacState(role, binding)).Should(Equal(all("present", 2)), "released at the end")
	})

	It("case 3: when the CSV's namespace is terminating, the OperatorGone event goes to its Namespace", func() {
		ns := newNamespace("gone-ns")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
		widgets := createOperands(widgetKind, ns, "w", 1, testFinalizer)
		deleteCSV(csv)
		Eventually(allInState(widgets, "deleting")).Should(BeTrue())
		// envtest runs no namespace controller: the namespace stays Terminating, as it does on a cluster
		// while the operands wait for finalizers.
		Expect(tenv.admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Eventually(reasonOf(keyOf(csv))).Should(Equal(ReasonOperatorGone))
		Expect(getCSV(keyOf(csv)).Status.Message).To(ContainSubstring("namespace " + ns + ","))
		Eventually(namespaceEvents(ns)).Should(ContainElement(And(HavePrefix(EventReasonOperatorGone), ContainSubstring("CSV "+ns+"/op.v1"))))
		releaseOperands(widgets...)
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
	})

	It("case 4: a completed cleanup held by another finalizer, and an aborted one, show their end in the status", func() {
		csv, widgets := cleanupHeldByOtherFinalizer("final-status")
		releaseOperands(widgets...)
		Eventually(csvFinalizers(keyOf(csv))).ShouldNot(ContainElement(Finalizer))
		final := getCSV(keyOf(csv))
		Expect(final.Status.Phase).To(Equal(PhaseCleanupOver))
		Expect(final.Status.Reason).To(Equal(ReasonCleanupCompleted))
		Expect(final.Status.Cleanup.PendingDeletion).To(BeEmpty())
		updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = nil })

		aborted, kept := cleanupHeldByOtherFinalizer("final-abort")
		updateCSV(keyOf(aborted), func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = false })
		Eventually(reasonOf(keyOf(aborted))).Should(Equal(ReasonCleanupAborted))
		Expect(getCSV(keyOf(aborted)).Status.Cleanup.PendingDeletion).To(BeEmpty())
		releaseOperands(kept...)
		updateCSV(keyOf(aborted), func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = nil })
	})

	It("case 5: holds RBAC with a finalizer patch even when its copy is stale and the rules exceed the controller's", func() {
		r := &Reconciler{client: controllerClient(), live: tenv.admin, opts: Options{}.withDefaults()}
		// Labels naming no CSV: the running controller leaves the object alone during the spec.
		role, _ := labelledClusterRBAC("stale-rv-"+newNamespace("stale"), map[string]string{"test": "stale-rv"}, "x", "y")
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}})
		stale := role.DeepCopy()
		Expect(tenv.admin.Update(ctx, role)).To(Succeed()) // moves the resourceVersion past the stale copy
		Expect(r.patchRBACFinalizer(ctx, stale, true)).To(Succeed())
		Expect(rbacState(role)()).To(Equal([]string{"held"}))
		Expect(r.patchRBACFinalizer(ctx, stale, false)).To(Succeed())
		Expect(rbacState(role)()).To(Equal([]string{"present"}))
	})

	It("case 6: never holds the RBAC of a finished cleanup again", func() {
		ns := newNamespace("rehold")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
		role, binding := olmClusterRBAC(csv, "operator")
		Eventually(rbacState(role, binding)).Should(Equal(all("held", 2)))
		updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = append(c.Finalizers, "test.cleanup.io/other") })
		deleteCSV(csv)
		Eventually(csvFinalizers(keyOf(csv))).ShouldNot(ContainElement(Finalizer))
		Consistently(rbacState(role, binding)).Should(Equal(all("present", 2)), "a stale reconcile must not hold it again")

		r := &Reconciler{live: tenv.admin}
		Expect(r.wantsRBACHold(ctx, keyOf(csv))).To(BeFalse(), "the live CSV no longer wants a hold")
		updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = nil })
	})

	// Found by the randomized lifecycle (seed 652380): the claim made the Gears "another installation's",
	// the cleanup no longer waited for them, and the operator went with them Terminating; the
	// ClusterExtension let the CRD go again and nothing ever finalized them.
	It("case 7: the CRs a cleanup deleted are finished before the operator goes, though another installation claims their CRD meanwhile", func() {
		ns := newNamespace("claimed")
		csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(lifecycleKind))
		gears := createOperands(lifecycleKind, ns, "g", 2, testFinalizer)
		Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
		deleteCSV(csv)
		Eventually(allInState(gears, "deleting")).Should(BeTrue())

		By("an OLM v1 ClusterExtension installs the Gear CRD too (its controller reference on the CRD), the controller restarting meanwhile (a new plan)")
		DeferCleanup(setExtensionClaim, false)
		restartController(func() { setExtensionClaim(true) })
		Consistently(csvGone(keyOf(csv))).WithTimeout(5*time.Second).Should(BeFalse(),
			"the operator must stay until it has finalized the Gears the cleanup deleted: the ClusterExtension may let the CRD go before finalizing them")
		Expect(getCSV(keyOf(csv)).Status.Message).To(ContainSubstring("2 CRs"), "the status names what the cleanup waits for")

		By("the ClusterExtension lets the CRD go; the operator finalizes the Gears")
		setExtensionClaim(false)
		releaseOperands(gears...)
		Eventually(csvGone(keyOf(csv))).Should(BeTrue())
	})
})

// midUpgrade installs op.v1 with cleanup enabled and two Widgets, then starts an upgrade to op.v2 that
// stays Pending while op.v1 is Replacing (as OLM leaves them until op.v2 succeeds).
func midUpgrade(prefix string) (string, []csvOpt, *v1alpha1.ClusterServiceVersion, *v1alpha1.ClusterServiceVersion, []*unstructured.Unstructured) {
	ns := newNamespace(prefix)
	opts := []csvOpt{targetNamespaces(ns), owns(widgetKind)}
	v1 := createCSV(ns, "op.v1", append(opts, cleanupEnabled(true))...)
	Eventually(csvFinalizers(keyOf(v1))).Should(ContainElement(Finalizer))
	widgets := createOperands(widgetKind, ns, "w", 2)
	v2 := createCSVWithStatus(ns, "op.v2", v1alpha1.CSVPhasePending, v1alpha1.CSVReasonRequirementsUnknown, append(opts, replaces("op.v1"))...)
	setPhase(v1, v1alpha1.CSVPhaseReplacing, v1alpha1.CSVReasonBeingReplaced)
	return ns, opts, v1, v2, widgets
}

// cleanupHeldByOtherFinalizer installs a CSV with cleanup enabled and a second finalizer, creates two
// Widgets held by the operator's finalizer, deletes the CSV and waits until its cleanup waits on them.
func cleanupHeldByOtherFinalizer(prefix string) (*v1alpha1.ClusterServiceVersion, []*unstructured.Unstructured) {
	ns := newNamespace(prefix)
	csv := createCSV(ns, "op.v1", cleanupEnabled(true), targetNamespaces(ns), owns(widgetKind))
	Eventually(csvFinalizers(keyOf(csv))).Should(ContainElement(Finalizer))
	updateCSV(keyOf(csv), func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = append(c.Finalizers, "test.cleanup.io/other") })
	widgets := createOperands(widgetKind, ns, "w", 2, testFinalizer)
	deleteCSV(csv)
	Eventually(reasonOf(keyOf(csv))).Should(Equal(ReasonWaitingOnCleanup))
	return csv, widgets
}

func reasonOf(key types.NamespacedName) func() v1alpha1.ConditionReason {
	return func() v1alpha1.ConditionReason { return getCSV(key).Status.Reason }
}

// olmTargetRBAC creates what OLM copies into a target namespace for a SingleNamespace operator: a Role
// and RoleBinding labelled for the copied CSV there (olm.owner.namespace=target) with olm.copiedFrom.
func olmTargetRBAC(csv *v1alpha1.ClusterServiceVersion, target string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	labels := olmOwnerLabels(target, csv.Name)
	labels[v1alpha1.CopiedLabelKey] = csv.Namespace
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: csv.Name + "-operator", Labels: labels}}
	role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{testGroup}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch", "update", "patch"}}}
	// A reinstalled CSV of the same name finds the Roles of the previous one (OLM updates them in place).
	Expect(client.IgnoreAlreadyExists(tenv.admin.Create(ctx, role))).To(Succeed())
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: role.Name, Labels: labels}}
	binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}
	binding.Subjects = []rbacv1.Subject{{Kind: "ServiceAccount", Name: "operator", Namespace: csv.Namespace}}
	Expect(client.IgnoreAlreadyExists(tenv.admin.Create(ctx, binding))).To(Succeed())
	return role, binding
}

// operatorDeployment returns the Deployment createCSV's install strategy names ("operator"), which
// createCSV makes as OLM would (nothing runs it: envtest has no kubelet).
func operatorDeployment(ns string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	Expect(tenv.admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "operator"}, d)).To(Succeed())
	return d
}

// ensureOperatorDeployment creates the Deployment "operator" in ns unless it exists.
func ensureOperatorDeployment(ns string) {
	Expect(client.IgnoreAlreadyExists(tenv.admin.Create(ctx, newOperatorDeployment(ns)))).To(Succeed())
}

// newOperatorDeployment is the Deployment the test CSVs name (no pods run on a bare API server).
func newOperatorDeployment(ns string) *appsv1.Deployment {
	labels := map[string]string{"app": "operator"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "operator"}}
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
	d.Spec.Template.Labels = labels
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "operator", Image: "fixtures.local/operator:v1"}}
	return d
}

// namespaceEvents returns "reason: note" of the events regarding the Namespace ns (stored in "default").
func namespaceEvents(ns string) func() []string {
	return func() []string {
		list := &eventsv1.EventList{}
		Expect(tenv.admin.List(ctx, list, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "Namespace" && e.Regarding.Name == ns {
				out = append(out, e.Reason+": "+e.Note)
			}
		}
		return out
	}
}

// controllerClient is a client with exactly the controller's ServiceAccount permissions.
func controllerClient() client.Client {
	c, err := client.New(tenv.asServiceAccount(operandcleanupconfig.Namespace, operandcleanupconfig.ServiceAccount), client.Options{Scheme: NewScheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}
