package olm

import (
	"context"
	"fmt"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// ProbeNamespace holds the OperatorGroup used to check that OLM reconciles.
const ProbeNamespace = "cleanup-e2e-olm-probe"

// probeWindow is how long one Reconciling call waits for OLM to answer its probe.
const probeWindow = 5 * time.Second

// Reconciling reports whether OLM's olm-operator acts now: it creates a new OperatorGroup in
// ProbeNamespace and waits up to probeWindow for OLM to write its status, then deletes it. A health
// endpoint only says the process is up; an old probe's status only says OLM acted once. This fails for
// an OLM that is stopped, crashed or wedged.
//
// OLM leaves nothing behind for it: olm-operator writes a new OperatorGroup's status, then creates its
// admin, edit and view ClusterRoles in the same sync, and deletes them when it sees the OperatorGroup
// deleted, from its informer cache (pkg/controller/operators/olm/operatorgroup.go: syncOperatorGroups,
// operatorGroupDeleted). A probe deleted in between, or before that cache has the roles, left them on
// the cluster for ever, three a probe. So a probe waits for its roles before it goes, and then removes
// the roles of every probe OperatorGroup that is gone (removeOrphanedProbeRoles).
func Reconciling(ctx context.Context, c client.Client) (bool, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ProbeNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("create OLM probe namespace: %w", err)
	}
	og := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ProbeNamespace, GenerateName: "probe-"},
		Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: []string{ProbeNamespace}}}
	if err := c.Create(ctx, og); err != nil {
		return false, fmt.Errorf("create OLM probe OperatorGroup: %w", err)
	}
	answered := false
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), intervals.Get(intervals.Request))
		defer cancel()
		if answered { // OLM's sync goes on to create the probe's ClusterRoles: let it, then they can go
			_ = intervals.Wait(dctx, intervals.Request, func() (bool, string) {
				roles, err := probeRoles(dctx, c)
				return err != nil || len(roles[og.Name]) >= 3, "OLM has not created the probe's admin, edit and view ClusterRoles"
			}, intervals.Within(probeWindow), intervals.Every(50*time.Millisecond))
		}
		_ = client.IgnoreNotFound(c.Delete(dctx, og))
		removeOrphanedProbeRoles(dctx, c)
	}()
	var readErr error
	// The window bounds the polling, not each read: a read under the window's deadline is refused by
	// client-go's rate limiter when its wait would cross it, which is no answer from OLM (found by the
	// flake hunt under load). So the reads use the caller's ctx. The window is not scaled: it is one
	// attempt, and WaitReconciling, which repeats it, has the scaled timeout.
	_ = intervals.Wait(ctx, intervals.OLMReady, func() (bool, string) {
		if readErr = c.Get(ctx, client.ObjectKeyFromObject(og), og); readErr != nil {
			return true, ""
		}
		answered = og.Status.LastUpdated != nil && len(og.Status.Namespaces) > 0
		return answered, "no status yet"
	}, intervals.Within(probeWindow), intervals.Every(100*time.Millisecond))
	if answered {
		return true, nil
	}
	if readErr != nil && ctx.Err() == nil {
		return false, readErr
	}
	return false, nil
}

// probeRoles lists the ClusterRoles OLM made for OperatorGroups in ProbeNamespace, by OperatorGroup.
func probeRoles(ctx context.Context, c client.Client) (map[string][]rbacv1.ClusterRole, error) {
	list := &rbacv1.ClusterRoleList{}
	if err := c.List(ctx, list, client.MatchingLabels{LabelOwnerKind: "OperatorGroup", LabelOwnerNamespace: ProbeNamespace}); err != nil {
		return nil, err
	}
	by := map[string][]rbacv1.ClusterRole{}
	for _, r := range list.Items {
		by[r.Labels[LabelOwner]] = append(by[r.Labels[LabelOwner]], r)
	}
	return by, nil
}

// removeOrphanedProbeRoles deletes the ClusterRoles OLM made for probe OperatorGroups that no longer
// exist, each with a UID precondition. Best effort: a user who may not list or delete ClusterRoles keeps
// them, as before.
func removeOrphanedProbeRoles(ctx context.Context, c client.Client) {
	roles, err := probeRoles(ctx, c)
	if err != nil {
		return
	}
	for name, rs := range roles {
		err := c.Get(ctx, client.ObjectKey{Namespace: ProbeNamespace, Name: name}, &operatorsv1.OperatorGroup{})
		if !apierrors.IsNotFound(err) {
			continue // its OperatorGroup is there (a probe running now), or unknown: OLM's to remove
		}
		for i := range rs {
			_ = c.Delete(ctx, &rs[i], client.Preconditions{UID: &rs[i].UID})
		}
	}
}

// WaitReconciling polls Reconciling until it is true or timeout passes (≤ 0: the olm-ready interval).
func WaitReconciling(ctx context.Context, c client.Client, timeout time.Duration) error {
	timeout = intervals.Or(timeout, intervals.OLMReady)
	// Reconciling's reads end with the wait too, not a probe window later.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := intervals.Wait(ctx, intervals.OLMReady, func() (bool, string) {
		ok, err := Reconciling(ctx, c)
		if err != nil {
			return ok, err.Error()
		}
		return ok, fmt.Sprintf("no status on a new probe OperatorGroup within %s", probeWindow)
	}, intervals.Within(timeout), intervals.Every(time.Millisecond)) // each Reconciling call already waited up to probeWindow
	if err != nil {
		return fmt.Errorf("OLM did not reconcile the probe OperatorGroup in %s: %w", ProbeNamespace, err)
	}
	return nil
}
