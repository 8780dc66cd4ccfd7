package cleanup

import (
	"context"
	"fmt"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	fixturesv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

// The whole documented matrix for widget-operator: unset, disabled, enabled in all four install modes
// (operands in other namespaces untouched), pending listing and its cap, abort, upgrade v0.1.0 →
// v0.2.0 → v0.3.0. widget-operator's finalizer needs its cluster permissions (records live outside
// the target namespaces), so every enabled case also proves the RBAC is kept through cleanup.
var _ = specs.OperandCleanupSpec(context.Background(), widgetOperator)

// widgetOperator describes widget-operator to the spec library; the fixture-specific specs reuse it.
var widgetOperator = specs.OperandCleanupSpecInput{
	Cluster:           clusterUnderTest,
	Name:              "widget-operator",
	BundleDir:         bundles.Dir("widget-operator", "v0.1.0"),
	UpgradeBundleDirs: []string{bundles.Dir("widget-operator", "v0.2.0"), bundles.Dir("widget-operator", "v0.3.0")},
	InstallModes: []operatorsv1alpha1.InstallModeType{
		operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace,
		operatorsv1alpha1.InstallModeTypeMultiNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces,
	},
	Samples:    widgetSamples,
	Reconciled: widgetReconciled,
	Finalized:  recordGone,
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

// widgetReconciled: widget-operator has put its finalizer on the object and written its record.
func widgetReconciled(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return err
	}
	if !containsString(live.GetFinalizers(), widget.Finalizer) {
		return fmt.Errorf("%s %s has no %s finalizer yet (finalizers %v)", obj.GetKind(), obj.GetName(), widget.Finalizer, live.GetFinalizers())
	}
	return c.Get(ctx, recordKey(obj), &corev1.ConfigMap{})
}

// recordGone: the operator's finalizer deleted the object's record in the records namespace.
func recordGone(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	err := c.Get(ctx, recordKey(obj), &corev1.ConfigMap{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("record %s of %s %s still exists", recordKey(obj), obj.GetKind(), obj.GetName())
}

func recordKey(obj client.Object) types.NamespacedName {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	return types.NamespacedName{Namespace: widget.DefaultRecordsNamespace, Name: widget.RecordName(kind, obj.GetNamespace(), obj.GetName())}
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
