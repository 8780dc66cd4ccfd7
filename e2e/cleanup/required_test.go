package cleanup

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/gizmo"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

var gizmoOperator = specs.OperandCleanupSpecInput{
	Environment: clusterUnderTest,
	Name:        "gizmo-operator",
	BundleDir:   bundles.Dir("gizmo-operator", "v0.1.0"),
	Samples: func(string) []*unstructured.Unstructured {
		return []*unstructured.Unstructured{toUnstructured(&fixturesv1alpha1.Gizmo{ObjectMeta: metav1.ObjectMeta{Name: "sample"}})}
	},
	// gizmo-operator has made the Widget it requires.
	Reconciled: func(ctx context.Context, c client.Client, g *unstructured.Unstructured) error {
		return c.Get(ctx, client.ObjectKey{Namespace: g.GetNamespace(), Name: gizmo.WidgetName(g.GetName())}, &fixturesv1alpha1.Widget{})
	},
}

var _ = Describe("Operand cleanup and required CRDs", Label("operand-cleanup", "required-crds"), func() {
	It("removes the Gizmos of gizmo-operator and leaves the Widgets it requires", func(ctx context.Context) {
		// The installation first: it holds the APIs gizmo-operator uses (Widget among them), so that no
		// spec deleting the Widget CRD (an OLM v1 uninstall) runs meanwhile.
		r := specs.NewInstallation(ctx, gizmoOperator, operatorsv1alpha1.InstallModeTypeOwnNamespace)
		By("installing the Widget CRD gizmo-operator requires (widget-operator's bundle provides it), and only that one")
		widgetBundle, err := bundles.Load(bundles.Dir("widget-operator", "v0.1.0"))
		Expect(err).NotTo(HaveOccurred())
		Expect(kube.ApplyCRDs(ctx, k8s, requiredOf(widgetBundle.CRDs, "widgets.fixtures.cleanup-e2e.io")...)).To(Succeed())

		r.Install(ctx, gizmoOperator.BundleDir, ptr.To(true))
		r.CreateOperands(ctx)
		gizmos, _ := r.Operands(r.WatchedNamespaces(), false)
		ns := r.WatchedNamespaces()[0]
		userWidget := &fixturesv1alpha1.Widget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "made-by-a-user"}}
		Expect(k8s.Create(ctx, userWidget)).To(Succeed())

		r.Uninstall(ctx)
		r.ExpectRemoved(ctx, gizmos)
		r.ExpectUninstalled(ctx)

		By("checking every Widget is still there: Widget is a required API, not an owned one")
		widgets := &fixturesv1alpha1.WidgetList{}
		Consistently(func() ([]string, error) {
			err := k8s.List(ctx, widgets, client.InNamespace(ns))
			var names []string
			for _, w := range widgets.Items {
				if w.DeletionTimestamp == nil {
					names = append(names, w.Name)
				}
			}
			return names, err
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(ConsistOf(gizmo.WidgetName("sample"), "made-by-a-user"))
	})
})

// requiredOf is the CRD named name among crds (none when absent).
func requiredOf(crds []*apiextensionsv1.CustomResourceDefinition, name string) []*apiextensionsv1.CustomResourceDefinition {
	for _, c := range crds {
		if c.Name == name {
			return []*apiextensionsv1.CustomResourceDefinition{c}
		}
	}
	return nil
}
