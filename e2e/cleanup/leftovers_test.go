package cleanup

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/leftovers"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

// leakyWidgets: widget-operator with a Widget whose finalizer leaks a ConfigMap into the shared
// records namespace (spec.leakConfigMap), which the leftovers check must list. Only OwnNamespace:
// the leak does not depend on the install mode.
func leakyWidgets(name string) specs.OperandCleanupSpecInput {
	in := widgetOperator
	in.Name = name
	in.UpgradeBundleDirs = nil
	in.InstallModes = []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace}
	in.Samples = func(string) []*unstructured.Unstructured {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(widgetGVK)
		w.SetName("sample")
		_ = unstructured.SetNestedField(w.Object, true, "spec", "leakConfigMap")
		return []*unstructured.Unstructured{w}
	}
	in.LeftoverNamespaces = []string{widget.DefaultRecordsNamespace}
	return in
}

// The leak, declared: the library's cleanup-enabled case passes and lists it as expected.
var leakDeclared = func() specs.OperandCleanupSpecInput {
	in := leakyWidgets("widget-leak-declared")
	in.ExpectedLeftovers = []leftovers.Matcher{{Kind: "ConfigMap", Namespace: widget.DefaultRecordsNamespace,
		Labels: map[string]string{fixturesv1alpha1.LabelLeaked: "true"}, Reason: "spec.leakConfigMap makes widget-operator leak it"}}
	return in
}()

var _ = Describe("Leftovers report", Label("operand-cleanup", "leftovers"), func() {
	It("names the ConfigMap a leaky finalizer leaves behind, and the check fails on it", func(ctx context.Context) {
		in := leakyWidgets("widget-leaky")
		in.LeftoversTimeout = 4 * time.Second
		r := specs.NewInstallation(ctx, in, operatorsv1alpha1.InstallModeTypeOwnNamespace)
		r.SnapshotBeforeInstall(ctx)
		r.Install(ctx, in.BundleDir, ptr.To(true))
		r.CreateOperands(ctx)
		removed, _ := r.Operands(r.WatchedNamespaces(), false)
		Expect(removed).To(HaveLen(1))
		leaked := &corev1.ConfigMap{}
		leaked.Namespace = widget.DefaultRecordsNamespace
		leaked.Name = widget.RecordName("leaked-Widget", removed[0].GetNamespace(), removed[0].GetName())
		DeferCleanup(func(ctx context.Context) { _ = client.IgnoreNotFound(k8s.Delete(ctx, leaked)) })

		r.Uninstall(ctx)
		r.ExpectRemoved(ctx, removed)
		r.ExpectUninstalled(ctx)

		// What olm-operator leaves when an OperatorGroup goes while it syncs it: its ClusterRoles,
		// labelled with the gone group. OLM's timing makes that race rare, so the role is planted.
		orphan := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "olm.og.gone.admin-", Labels: map[string]string{
			olm.LabelOwner: "gone", olm.LabelOwnerNamespace: removed[0].GetNamespace(), olm.LabelOwnerKind: "OperatorGroup"}}}
		Expect(k8s.Create(ctx, orphan)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { _ = client.IgnoreNotFound(k8s.Delete(ctx, orphan)) })

		By("checking the report names the leaked ConfigMap, why it is blamed and who made it")
		rep, err := r.LeftoversReport(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(rep.Leftovers).To(ConsistOf(HaveField("Object.Name", leaked.Name)), rep.String())
		l := rep.Leftovers[0]
		Expect(l.Kind).To(Equal("ConfigMap"))
		Expect(l.Namespace).To(Equal(widget.DefaultRecordsNamespace))
		Expect(l.Labels).To(HaveKeyWithValue(fixturesv1alpha1.LabelManagedBy, widget.Name))
		Expect(l.Why).To(Or(ContainSubstring(removed[0].GetNamespace()), ContainSubstring(string(removed[0].GetUID()))))

		By("checking OLM's orphaned ClusterRole is listed apart, not blamed on the operator")
		Expect(rep.OLMOrphans).To(ConsistOf(HaveField("Object.Name", orphan.Name)), rep.String())
		Expect(rep.String()).To(ContainSubstring("ClusterRole(s) OLM left behind"))

		By("checking the library's check fails with a message listing it")
		failures := InterceptGomegaFailures(func() { r.ExpectNoLeftovers(ctx) })
		Expect(failures).To(HaveLen(1))
		Expect(failures[0]).To(And(
			ContainSubstring("1 object(s) left behind by the installation"),
			ContainSubstring("ConfigMap "+widget.DefaultRecordsNamespace+"/"+leaked.Name),
			ContainSubstring(fixturesv1alpha1.LabelLeaked+"=true"),
			ContainSubstring("ExpectedLeftovers"),
		))
		GinkgoWriter.Println("the failure a leaky operator gets:\n" + failures[0])
		Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(orphan), &rbacv1.ClusterRole{}))).To(BeTrue(),
			"the check deletes the ClusterRole OLM left for the installation's gone OperatorGroup")
	})
})

// With the leak declared expected, the library's cleanup-enabled case passes. The leaked ConfigMaps of
// this spec are removed afterwards (the records namespace is shared).
var _ = Describe("Leftovers declared expected", Label("leftovers"), func() {
	AfterEach(func(ctx context.Context) {
		cms := &corev1.ConfigMapList{}
		Expect(k8s.List(ctx, cms, client.InNamespace(widget.DefaultRecordsNamespace),
			client.MatchingLabels{fixturesv1alpha1.LabelLeaked: "true"})).To(Succeed())
		for i := range cms.Items {
			if strings.HasPrefix(cms.Items[i].Labels[fixturesv1alpha1.LabelOwnerNamespace], leakDeclared.Name+"-") {
				_ = client.IgnoreNotFound(k8s.Delete(ctx, &cms.Items[i]))
			}
		}
	})
	specs.DescribeCleanupEnabled(leakDeclared)
})
