package olm

import (
	"context"
	"fmt"
	"sort"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SetOperatorGroupTargets changes the target namespaces of the one OperatorGroup in namespace, as a user
// editing it would. OLM then rewrites olm.targetNamespaces on the CSVs of that namespace.
func SetOperatorGroupTargets(ctx context.Context, c client.Client, namespace string, targets []string) error {
	want := append([]string{}, targets...)
	sort.Strings(want)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		list := &operatorsv1.OperatorGroupList{}
		if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("namespace %s has %d OperatorGroups, want exactly one to change its targets to %v", namespace, len(list.Items), want)
		}
		og := &list.Items[0]
		og.Spec.TargetNamespaces = want
		if err := c.Update(ctx, og); err != nil {
			return fmt.Errorf("setting OperatorGroup %s/%s's targets to %v: %w", og.Namespace, og.Name, want, err)
		}
		return nil
	})
}
