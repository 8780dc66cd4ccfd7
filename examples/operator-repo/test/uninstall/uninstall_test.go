package uninstall

import (
	"context"
	"path/filepath"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"

	// In your repo: the checks of your operator's own (the widget fixture ships these).
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
)

// In your repo: your bundle, e.g. filepath.Join("..", "..", "bundle").
var bundleDir = filepath.Join("..", "..", "..", "..", "bundles", "widget-operator", "v0.1.0")

// The documented operand-cleanup cases for our operator: cleanup unset and disabled keep the
// operands; enabled removes them (the finalizer runs, its records go) and leaves nothing else behind;
// the pending-deletion listing, its cap, and abort.
var _ = specs.OperandCleanupSpec(context.Background(), specs.OperandCleanupSpecInput{
	Environment: clusterUnderTest,
	Name:        "widget-operator",
	BundleDir:   bundleDir,
	// Left out, every mode the CSV supports runs; one keeps this example quick.
	InstallModes: []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace},
	// The CSV's own samples (its alm-examples): a Widget per namespace and a cluster-scoped WidgetClass.
	Samples:    specs.MustALMExamples(bundleDir),
	Reconciled: widget.Reconciled,
	Finalized:  widget.Finalized,
	// Our finalizer keeps records in a namespace of its own: the leftovers check looks there too.
	LeftoverNamespaces: []string{widget.DefaultRecordsNamespace},
})
