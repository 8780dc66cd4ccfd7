package olm

import (
	"context"
	"fmt"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/bundle"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// InstallBundleInput installs a registry-v1 bundle directory directly (no catalog).
type InstallBundleInput struct {
	Client           client.Client
	BundleDir        string
	Namespace        string
	InstallMode      operatorsv1alpha1.InstallModeType
	TargetNamespaces []string
	// Cleanup sets spec.cleanup.enabled (nil keeps the bundle's value).
	Cleanup *bool
	Timeout time.Duration
	// Logs: see InstallCSVInput.Logs.
	Logs PodLogs
}

// InstallBundle loads the bundle and installs it with InstallCSV.
func InstallBundle(ctx context.Context, in InstallBundleInput) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	b, err := bundle.Load(in.BundleDir)
	if err != nil {
		return nil, err
	}
	return InstallCSV(ctx, InstallCSVInput{Client: in.Client, CSV: b.CSV, CRDs: b.CRDs, Objects: b.Others, Namespace: in.Namespace,
		InstallMode: in.InstallMode, TargetNamespaces: in.TargetNamespaces, Cleanup: in.Cleanup, Timeout: in.Timeout, Logs: in.Logs})
}

// UpgradeInput moves an installed operator to the next bundle, whose CSV replaces the installed one.
type UpgradeInput struct {
	Client    client.Client
	From      *operatorsv1alpha1.ClusterServiceVersion
	BundleDir string
	Timeout   time.Duration
	// WithoutRequirements (StartUpgrade only) leaves out the new CSV's ServiceAccount and RBAC, as an
	// InstallPlan that failed midway does: OLM then keeps the new CSV Pending (RequirementsNotMet) and the
	// old one Replacing, so a spec can act in the middle of an upgrade without racing OLM.
	WithoutRequirements bool
}

// Upgrade runs StartUpgrade and waits until the new CSV is Succeeded and OLM has removed the CSV it
// replaces. It returns the new live CSV.
func Upgrade(ctx context.Context, in UpgradeInput) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	if in.WithoutRequirements {
		return nil, fmt.Errorf("upgrade of %s: WithoutRequirements can never complete; use StartUpgrade", in.From.Name)
	}
	csv, err := StartUpgrade(ctx, in)
	if err != nil {
		return nil, err
	}
	timeout := intervals.Or(in.Timeout, intervals.CSVSucceeded)
	live, err := WaitForCSVPhase(ctx, in.Client, client.ObjectKeyFromObject(csv), operatorsv1alpha1.CSVPhaseSucceeded, timeout)
	if err != nil {
		return nil, fmt.Errorf("upgrade %s → %s: %w", in.From.Name, csv.Name, err)
	}
	if err := WaitForCSVGone(ctx, in.Client, client.ObjectKeyFromObject(in.From), timeout); err != nil {
		return nil, fmt.Errorf("upgrade %s → %s: the replaced CSV was not removed: %w", in.From.Name, csv.Name, err)
	}
	return live, nil
}

// StartUpgrade creates the next CSV (as an InstallPlan of the next channel entry would) and returns it
// at once, before OLM acted on it: specs that need the middle of an upgrade continue from there.
func StartUpgrade(ctx context.Context, in UpgradeInput) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	b, err := bundle.Load(in.BundleDir)
	if err != nil {
		return nil, err
	}
	if b.CSV.Spec.Replaces != in.From.Name {
		return nil, fmt.Errorf("bundle %s: CSV %s has spec.replaces %q, not the installed %s", in.BundleDir, b.CSV.Name, b.CSV.Spec.Replaces, in.From.Name)
	}
	if err := kube.ApplyCRDs(ctx, in.Client, b.CRDs...); err != nil {
		return nil, err
	}
	// The new CSV starts with the spec.cleanup the bundle ships; carrying the user's choice over is the
	// operand-cleanup controller's job, which the specs check.
	csv, err := createCSV(ctx, in.Client, b.CSV, in.From.Namespace, nil)
	if err != nil {
		return nil, err
	}
	if !in.WithoutRequirements {
		if err := CreateRequirements(ctx, in.Client, csv); err != nil {
			return nil, err
		}
	}
	if err := nudge(ctx, in.Client, csv); err != nil {
		return nil, err
	}
	return csv, nil
}

// UninstallInput removes an operator the way `operator-sdk cleanup` does.
type UninstallInput struct {
	Client client.Client
	CSV    *operatorsv1alpha1.ClusterServiceVersion
	// Wait for the CSV to be gone (its finalizers, including operand cleanup, done). Without it,
	// Uninstall returns right after the delete, for specs that watch cleanup progress.
	Wait bool
	// DeleteOperatorGroup deletes every OperatorGroup of the CSV's namespace after the CSV is gone:
	// only for a namespace the caller made for this operator (another operator's there would lose its).
	DeleteOperatorGroup bool
	// DeleteCRDs deletes the CRDs the CSV owns after the CSV is gone (like --delete-crds), and so every
	// custom resource of them in the cluster: only for CRDs the caller's install created.
	DeleteCRDs bool
	Timeout    time.Duration
}

// Uninstall deletes the CSV, and after it is gone (when asked) the OperatorGroup and owned CRDs. A
// CSV read from the cluster (it has a UID) is deleted only if it is still that object: one re-created
// under its name since is someone else's install, and is left alone with an error saying so.
func Uninstall(ctx context.Context, in UninstallInput) error {
	var opts []client.DeleteOption
	if uid := in.CSV.UID; uid != "" {
		opts = append(opts, client.Preconditions{UID: &uid})
	}
	if err := client.IgnoreNotFound(in.Client.Delete(ctx, in.CSV, opts...)); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("CSV %s/%s is not the one installed (UID %s): it was re-created since, and is left alone: %w",
				in.CSV.Namespace, in.CSV.Name, in.CSV.UID, err)
		}
		return fmt.Errorf("delete CSV %s/%s: %w", in.CSV.Namespace, in.CSV.Name, err)
	}
	if !in.Wait && !in.DeleteOperatorGroup && !in.DeleteCRDs {
		return nil
	}
	timeout := intervals.Or(in.Timeout, intervals.CSVSucceeded)
	if err := WaitForCSVGone(ctx, in.Client, client.ObjectKeyFromObject(in.CSV), timeout); err != nil {
		return err
	}
	if in.DeleteOperatorGroup {
		if err := in.Client.DeleteAllOf(ctx, &operatorsv1.OperatorGroup{}, client.InNamespace(in.CSV.Namespace)); err != nil {
			return fmt.Errorf("delete OperatorGroups in %s: %w", in.CSV.Namespace, err)
		}
	}
	if in.DeleteCRDs {
		for _, owned := range in.CSV.Spec.CustomResourceDefinitions.Owned {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			crd.Name = owned.Name
			if err := client.IgnoreNotFound(in.Client.Delete(ctx, crd)); err != nil {
				return fmt.Errorf("delete CRD %s: %w", owned.Name, err)
			}
		}
	}
	return nil
}

// GetCSV reads the live CSV.
func GetCSV(ctx context.Context, c client.Client, namespace, name string) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	return csv, c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, csv)
}
