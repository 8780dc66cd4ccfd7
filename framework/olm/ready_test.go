package olm_test

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// OLM's probe leaves nothing on the cluster: the admin, edit and view ClusterRoles olm-operator makes
// for each probe OperatorGroup go with it. A probe deleted while OLM's sync of it was still running
// left them for ever, three a probe (on kind: the OperatorGroup deleted 5 ms after OLM created the
// first of them). That race is OLM's timing, rare on envtest, so the test also plants what it left, a
// role of a probe OperatorGroup that is gone, which a probe must remove.
func testTheOLMProbeLeavesNoClusterRoles(ctx context.Context, t *testing.T, c client.Client) {
	orphan := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "olm.og.probe-gone.admin-planted", Labels: map[string]string{
		olm.LabelOwner: "probe-gone", olm.LabelOwnerNamespace: olm.ProbeNamespace, olm.LabelOwnerKind: "OperatorGroup"}}}
	if err := c.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := olm.WaitReconciling(ctx, c, 0); err != nil {
			t.Fatal(err)
		}
	}
	// OLM deletes a deleted OperatorGroup's roles in its own time: wait for none, do not take a snapshot.
	err := intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		list := &rbacv1.ClusterRoleList{}
		if err := c.List(ctx, list, client.MatchingLabels{olm.LabelOwnerKind: "OperatorGroup", olm.LabelOwnerNamespace: olm.ProbeNamespace}); err != nil {
			return false, err.Error()
		}
		var names []string
		for _, r := range list.Items {
			names = append(names, r.Name)
		}
		return len(names) == 0, fmt.Sprintf("ClusterRoles of deleted probe OperatorGroups are still there: %v", names)
	})
	if err != nil {
		t.Fatal(err)
	}
}
