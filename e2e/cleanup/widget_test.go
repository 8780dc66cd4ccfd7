package cleanup

import (
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

// The whole documented matrix for widget-operator: unset, disabled, enabled in all four install modes
// (operands in other namespaces untouched), pending listing and its cap, abort, upgrade v0.1.0 →
// v0.2.0 → v0.3.0. widget-operator's finalizer needs its cluster permissions (records live outside
// the target namespaces), so every enabled case also proves the RBAC is kept through cleanup.
var _ = specs.DescribeOperandCleanup(widgetOperator)

// widgetOperator describes widget-operator to the spec library; the fixture-specific specs reuse it.
var widgetOperator = specs.OperandCleanupSpecInput{
	Environment:       clusterUnderTest,
	Name:              "widget-operator",
	BundleDir:         bundles.Dir("widget-operator", "v0.1.0"),
	UpgradeBundleDirs: []string{bundles.Dir("widget-operator", "v0.2.0"), bundles.Dir("widget-operator", "v0.3.0")},
	InstallModes: []operatorsv1alpha1.InstallModeType{
		operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace,
		operatorsv1alpha1.InstallModeTypeMultiNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces,
	},
	Samples:    widgetSamples,
	Reconciled: widget.Reconciled,
	Finalized:  widget.Finalized,
}

var widgetGVK = fixturesv1alpha1.GroupVersion.WithKind("Widget")

// widgetSamples: a Widget per namespace and a WidgetClass (cluster-scoped; only a global operator's
// cleanup removes it).
func widgetSamples(string) []*unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	w.SetName("sample")
	_ = unstructured.SetNestedStringMap(w.Object, map[string]string{"color": "blue"}, "spec", "data")
	wc := &unstructured.Unstructured{}
	wc.SetGroupVersionKind(fixturesv1alpha1.GroupVersion.WithKind("WidgetClass"))
	wc.SetName("sample-class")
	return []*unstructured.Unstructured{w, wc}
}
