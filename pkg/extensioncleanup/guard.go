package extensioncleanup

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OrphanGuardName names the ValidatingAdmissionPolicy, and its binding, that keep operator-controller's
// late writes from handing an opted-in extension's CRD to the garbage collector
// (config/operand-cleanup/40-orphan-guard.yaml): on a CRD an orphan uninstall marked
// (OrphanedFromAnnotation) it refuses a reference to the ClusterExtension the mark names; on a CRD the
// controller holds (HeldByAnnotation) it refuses dropping the holder's reference but keeping the mark.
//
// Why it is needed: operator-controller v1.2.0 keeps reconciling a deleted ClusterExtension, and a
// reconcile that read it before it went can patch an orphaned CRD back to it, even seconds after it went:
// helm-operator-plugins' JSON patch adds the reference to a CRD that has none. The garbage collector
// then deletes the CRD, and every CR of its kind, within milliseconds; no reaction of this controller can
// win that race. The policy makes that write fail however late it comes.
const OrphanGuardName = "orphaned-crds.cleanup-e2e.io"

// UnarmedGuardName names the ValidatingAdmissionPolicy, and its binding, that refuse to delete an opted-in
// ClusterExtension this controller has not armed yet, i.e. without Finalizer
// (config/operand-cleanup/41-unarmed-guard.yaml). Arming happens on the controller's first reconcile of
// the opt-in; a deletion before it (the controller down, or a delete right after the annotation) would
// otherwise be OLM v1's own uninstall, which lets the garbage collector take the CRDs with every CR.
const UnarmedGuardName = "unarmed-clusterextensions.cleanup-e2e.io"

var (
	vapGVK        = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}
	vapBindingGVK = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}
)

func (r *Reconciler) orphanGuard(ctx context.Context) error { return checkOrphanGuard(ctx, r.live) }

// checkOrphanGuard checks, with live reads, that the orphan guard is in force: the policy exists, and a
// binding of the same name binds it with the Deny action to every object. The error says what is missing
// and how to fix it.
func checkOrphanGuard(ctx context.Context, live client.Reader) error {
	fix := "apply config/operand-cleanup/40-orphan-guard.yaml: without it a late operator-controller reconcile can give an orphaned CRD back to its gone ClusterExtension, and the garbage collector then deletes it with every custom resource"
	get := func(gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		err := live.Get(ctx, types.NamespacedName{Name: OrphanGuardName}, u)
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("the %s %s does not exist: %s", gvk.Kind, OrphanGuardName, fix)
		case err != nil:
			return nil, fmt.Errorf("reading the %s %s (%s): %w", gvk.Kind, OrphanGuardName, fix, err)
		case u.GetDeletionTimestamp() != nil:
			return nil, fmt.Errorf("the %s %s is being deleted: %s once it is gone", gvk.Kind, OrphanGuardName, fix)
		}
		return u, nil
	}
	if _, err := get(vapGVK); err != nil {
		return err
	}
	b, err := get(vapBindingGVK)
	if err != nil {
		return err
	}
	policy, _, _ := unstructured.NestedString(b.Object, "spec", "policyName")
	actions, _, _ := unstructured.NestedStringSlice(b.Object, "spec", "validationActions")
	_, scoped, _ := unstructured.NestedFieldNoCopy(b.Object, "spec", "matchResources")
	if policy != OrphanGuardName || !slices.Contains(actions, "Deny") || scoped {
		return fmt.Errorf("the ValidatingAdmissionPolicyBinding %s must bind policy %s with action Deny and no matchResources (it has policy %q, actions %v, matchResources set: %t): %s",
			OrphanGuardName, OrphanGuardName, policy, actions, scoped, fix)
	}
	return nil
}
