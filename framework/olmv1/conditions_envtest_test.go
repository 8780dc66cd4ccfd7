package olmv1_test

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// waitConditions reads obj into live at each poll of interval n until check, given live's conditions,
// says done; a failed read is the poll's cause.
func waitConditions(ctx context.Context, c client.Client, n intervals.Name, obj, live *unstructured.Unstructured, check func([]metav1.Condition) (bool, string)) error {
	return intervals.Wait(ctx, n, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
			return false, err.Error()
		}
		conds, err := olmv1.Conditions(live)
		if err != nil {
			return false, err.Error()
		}
		return check(conds)
	})
}
