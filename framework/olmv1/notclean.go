package olmv1

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// UninstallNotClean checks what v1.2.0's uninstall guarantees despite the upstream race between the
// garbage collector removing the operator (its RBAC, its Deployment) and the CRD cleanup deleting its
// CRs: each CR stuck Terminating or finalized (no other verdict), at least one stuck, and crd (the CRs'
// CRD) Terminating. what names the deletion. It returns one message per failed check, naming each CR.
func UninstallNotClean(ctx context.Context, c client.Client, what, crd string, verdicts []CRVerdict) []string {
	var failed []string
	stuck := 0
	for _, v := range verdicts {
		switch v.Verdict {
		case StuckTerminating:
			stuck++
		case Finalized:
		default:
			failed = append(failed, fmt.Sprintf("OLM v1 %s changed what %s does to its CRs: %s %s/%s is %q; as measured, each is stuck Terminating (or finalized, when the operator wins the race); got:\n%s",
				Version, what, v.Kind, v.Namespace, v.Name, v.Verdict, Report(verdicts)))
		}
	}
	if stuck == 0 {
		failed = append(failed, fmt.Sprintf("OLM v1 %s changed what %s does to its CRs: none is stuck Terminating, as measured at least one always was; got:\n%s",
			Version, what, Report(verdicts)))
	}
	live := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, types.NamespacedName{Name: crd}, live); err != nil {
		failed = append(failed, fmt.Sprintf("CRD %s: want it Terminating while its CRs are stuck, got %v", crd, err))
	} else if live.DeletionTimestamp == nil || !crdCondition(live, apiextensionsv1.Terminating, "InstanceDeletionInProgress") {
		failed = append(failed, fmt.Sprintf("CRD %s: want it Terminating (InstanceDeletionInProgress), got deletionTimestamp %v, conditions %+v",
			crd, live.DeletionTimestamp, live.Status.Conditions))
	}
	return failed
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType, reason string) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == typ && c.Status == apiextensionsv1.ConditionTrue && c.Reason == reason {
			return true
		}
	}
	return false
}
