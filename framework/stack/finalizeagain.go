package stack

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The API server's CRD finalizer deletes a CRD's instances before the CRD, and retries a failure with
// exponential backoff (DefaultTypedControllerRateLimiter: 5 ms doubling, up to 1000 s;
// apiextensions-apiserver pkg/controller/finalizer/crd_finalizer.go). A CRD deleted soon after it
// changed fails with "could not list instances: storage is (re)initializing" while the watch cache of its
// instances is rebuilt, and under load often enough that the next retry came minutes later (a teardown's
// 2 min wait ran out in flake hunts: docs/flakes.md). Any change to the CRD but its Terminating
// condition requeues it at once (updateCustomResourceDefinition there), as an administrator touching it
// would; so a wait for a CRD to go annotates it when its Terminating condition says the deletion failed.

// FinalizeAgainAnnotation is set on a terminating CRD (to the time) to make the API server's CRD
// finalizer retry now a deletion of its instances that failed.
const FinalizeAgainAnnotation = "cleanup-e2e.io/finalize-again"

// finalizeAgainEvery spaces the annotations: a retry that fails again backs off on its own.
const finalizeAgainEvery = 2 * time.Second

// finalizeAgainIfFailed annotates crd (a live CRD the run created, uid its UID) when its Terminating
// condition has reason InstanceDeletionFailed and the last annotation is old. It returns what it did,
// empty when nothing, for the wait's message.
func finalizeAgainIfFailed(ctx context.Context, c client.Client, crd *unstructured.Unstructured, uid types.UID) (string, error) {
	if crd.GetDeletionTimestamp() == nil || !instanceDeletionFailed(crd) {
		return "", nil
	}
	if last, err := time.Parse(time.RFC3339Nano, crd.GetAnnotations()[FinalizeAgainAnnotation]); err == nil && time.Since(last) < finalizeAgainEvery {
		return fmt.Sprintf("; annotated it (%s) at %s so that the API server's CRD finalizer retries", FinalizeAgainAnnotation, last.Format(time.TimeOnly)), nil
	}
	// the UID in the patch is a precondition: a CRD recreated meanwhile is someone else's
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"annotations":{%q:%q}}}`, uid, FinalizeAgainAnnotation, time.Now().UTC().Format(time.RFC3339Nano))
	if err := c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return "", fmt.Errorf("annotate CRD %s to make its finalizer retry: %w", crd.GetName(), err)
	}
	return fmt.Sprintf("; annotated it (%s) so that the API server's CRD finalizer retries now", FinalizeAgainAnnotation), nil
}

func instanceDeletionFailed(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Terminating" && m["status"] == "True" && m["reason"] == "InstanceDeletionFailed" {
			return true
		}
	}
	return false
}
