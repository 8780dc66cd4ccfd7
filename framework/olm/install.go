package olm

import (
	"context"
	"fmt"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// InstallCSVInput describes a direct install: the CSV and CRDs of a bundle, applied without a catalog
// the way OLM's catalog operator would apply an InstallPlan.
type InstallCSVInput struct {
	Client client.Client
	CSV    *operatorsv1alpha1.ClusterServiceVersion
	CRDs   []*apiextensionsv1.CustomResourceDefinition
	// Namespace the operator is installed in.
	Namespace string
	// InstallMode and TargetNamespaces define the OperatorGroup (see TargetNamespaces).
	InstallMode      operatorsv1alpha1.InstallModeType
	TargetNamespaces []string
	// Objects are the bundle's other manifests (Services, ConfigMaps, Secrets, RBAC, ServiceMonitors,
	// ...), created as OLM's InstallPlan creates them (bundleobjects.go); a kind OLM refuses, or one the
	// cluster does not serve, fails the install before anything is created.
	Objects []*unstructured.Unstructured
	// Cleanup sets spec.cleanup.enabled on the CSV (nil keeps what the bundle says).
	Cleanup *bool
	// Timeout bounds the wait for the CSV to succeed (default: intervals.CSVSucceeded).
	Timeout time.Duration
	// Logs reads the operator's pod logs (PodLogsOf), so that a failed wait quotes the last error a
	// crash-looping operator logged on a cluster with nodes. Nil: only its pods' statuses.
	Logs PodLogs
}

// InstallCSV installs the operator directly and waits until its CSV is Succeeded. It returns the live CSV.
func InstallCSV(ctx context.Context, in InstallCSVInput) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	if in.CSV == nil || in.Client == nil || in.Namespace == "" {
		return nil, fmt.Errorf("InstallCSVInput needs Client, CSV and Namespace")
	}
	targets, err := TargetNamespaces(in.InstallMode, in.Namespace, in.TargetNamespaces)
	if err != nil {
		return nil, fmt.Errorf("CSV %s: %w", in.CSV.Name, err)
	}
	if !supportsMode(in.CSV, in.InstallMode) {
		return nil, fmt.Errorf("CSV %s does not support install mode %s (spec.installModes)", in.CSV.Name, in.InstallMode)
	}
	if err := checkBundleObjects(in.Client, in.CSV.Name, in.Objects); err != nil {
		return nil, err
	}
	if err := EnsureNamespaces(ctx, in.Client, append([]string{in.Namespace}, targets...)...); err != nil {
		return nil, err
	}
	if _, err := EnsureOperatorGroup(ctx, in.Client, in.Namespace, targets); err != nil {
		return nil, err
	}
	if err := kube.ApplyCRDs(ctx, in.Client, in.CRDs...); err != nil {
		return nil, err
	}
	csv, err := createCSV(ctx, in.Client, in.CSV, in.Namespace, in.Cleanup)
	if err != nil {
		return nil, err
	}
	if err := createBundleObjects(ctx, in.Client, csv, in.Objects); err != nil {
		return nil, err
	}
	if err := CreateRequirements(ctx, in.Client, csv); err != nil {
		return nil, err
	}
	if err := nudge(ctx, in.Client, csv); err != nil {
		return nil, err
	}
	return waitForCSVPhase(ctx, in.Client, in.Logs, types.NamespacedName{Namespace: in.Namespace, Name: csv.Name},
		operatorsv1alpha1.CSVPhaseSucceeded, intervals.Or(in.Timeout, intervals.CSVSucceeded))
}

func supportsMode(csv *operatorsv1alpha1.ClusterServiceVersion, mode operatorsv1alpha1.InstallModeType) bool {
	for _, m := range csv.Spec.InstallModes {
		if m.Type == mode {
			return m.Supported
		}
	}
	return false
}

func createCSV(ctx context.Context, c client.Client, src *operatorsv1alpha1.ClusterServiceVersion, ns string, cleanup *bool) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	csv := src.DeepCopy()
	csv.Namespace = ns
	csv.ResourceVersion, csv.UID = "", ""
	csv.Status = operatorsv1alpha1.ClusterServiceVersionStatus{}
	if cleanup != nil {
		csv.Spec.Cleanup.Enabled = *cleanup
	}
	// A copied CSV of a global install of the same operator may still sit in the namespace while OLM
	// removes the copies of a parent that is going away: wait for it rather than fail.
	err := intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		err := c.Create(ctx, csv)
		if err == nil {
			return true, ""
		}
		if !apierrors.IsAlreadyExists(err) {
			return false, err.Error()
		}
		existing := &operatorsv1alpha1.ClusterServiceVersion{}
		if getErr := c.Get(ctx, client.ObjectKeyFromObject(csv), existing); getErr != nil {
			return false, getErr.Error()
		}
		if from, copied := existing.Labels[LabelCopiedFrom]; copied {
			return false, fmt.Sprintf("a CSV copied from namespace %s by a global install is still there", from)
		}
		return false, "a CSV of that name is already installed there"
	})
	if err != nil {
		return nil, fmt.Errorf("create CSV %s/%s: %w", ns, csv.Name, err)
	}
	return csv, nil
}

// LabelCopiedFrom marks the copies OLM makes of a CSV in the target namespaces of a global operator.
const LabelCopiedFrom = "olm.copiedFrom"

// nudge makes OLM look at the CSV again: it may have checked requirements before they existed.
func nudge(ctx context.Context, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion) error {
	patch := client.RawPatch(types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"annotations":{"cleanup-e2e.io/requirements-created":%q}}}`, time.Now().UTC().Format(time.RFC3339Nano))))
	return client.IgnoreNotFound(c.Patch(ctx, csv, patch))
}

// isGone reports whether err says the object does not exist.
func isGone(err error) bool { return apierrors.IsNotFound(err) }
