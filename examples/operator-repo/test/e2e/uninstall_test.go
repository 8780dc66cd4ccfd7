package e2e

import (
	"context"
	"path/filepath"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
	// In your repo: your operator's own checks (the widget fixture ships these two).
	Reconciled: widget.Reconciled,
	Finalized:  widget.Finalized,
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
