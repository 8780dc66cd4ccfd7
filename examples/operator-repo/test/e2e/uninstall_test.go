package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"

	// In your repo: your operator's API group and the names its finalizer uses.
	widgetv1alpha1 "github.com/cleanup-e2e/cleanup-e2e/fixtures/api/v1alpha1"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
)

// The documented operand-cleanup cases for our operator: cleanup unset and disabled keep the
// operands; enabled removes them (the finalizer runs, its records go) and leaves nothing else behind;
// the pending-deletion listing, its cap, and abort.
var _ = specs.OperandCleanupSpec(context.Background(), specs.OperandCleanupSpecInput{
	Cluster: func() specs.Cluster { return cl },
	Name:    "widget-operator",
	// In your repo: your bundle, e.g. filepath.Join("..", "..", "bundle").
	BundleDir:    filepath.Join("..", "..", "..", "..", "bundles", "widget-operator", "v0.1.0"),
	InstallModes: []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace},
	Samples:      samples,
	Reconciled:   reconciled,
	Finalized:    recordGone,
	// Our finalizer keeps records in a namespace of its own: the leftovers check looks there too.
	LeftoverNamespaces: []string{widget.DefaultRecordsNamespace},
})

var widgetGVK = widgetv1alpha1.GroupVersion.WithKind("Widget")

// samples: one Widget per namespace.
func samples(string) []*unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetGVK)
	w.SetName("sample")
	_ = unstructured.SetNestedStringMap(w.Object, map[string]string{"color": "blue"}, "spec", "data")
	return []*unstructured.Unstructured{w}
}

// reconciled: the operator put its finalizer on the Widget and wrote its record.
func reconciled(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	live := &widgetv1alpha1.Widget{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return err
	}
	if !slices.Contains(live.Finalizers, widget.Finalizer) {
		return fmt.Errorf("widget %s has no finalizer %s yet", obj.GetName(), widget.Finalizer)
	}
	return c.Get(ctx, recordKey(obj), &corev1.ConfigMap{})
}

// recordGone: the finalizer removed the Widget's record.
func recordGone(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	err := c.Get(ctx, recordKey(obj), &corev1.ConfigMap{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("record %s of widget %s is still there", recordKey(obj), obj.GetName())
}

func recordKey(obj client.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: widget.DefaultRecordsNamespace,
		Name: widget.RecordName("Widget", obj.GetNamespace(), obj.GetName())}
}
