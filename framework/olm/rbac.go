package olm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// OLM's ownership labels. OLM's informers only see RBAC labelled olm.managed, and on CSV deletion it
// deletes the cluster-scoped RBAC carrying the olm.owner* labels.
const (
	LabelManaged        = "olm.managed"
	LabelOwner          = "olm.owner"
	LabelOwnerNamespace = "olm.owner.namespace"
	LabelOwnerKind      = "olm.owner.kind"
)

// ownerLabels are the labels OLM's InstallPlan puts on what it creates for a CSV.
func ownerLabels(csv *operatorsv1alpha1.ClusterServiceVersion) map[string]string {
	return map[string]string{LabelManaged: "true", LabelOwner: csv.Name, LabelOwnerNamespace: csv.Namespace,
		LabelOwnerKind: operatorsv1alpha1.ClusterServiceVersionKind}
}

func csvOwnerRef(csv *operatorsv1alpha1.ClusterServiceVersion) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: operatorsv1alpha1.SchemeGroupVersion.String(),
		Kind: operatorsv1alpha1.ClusterServiceVersionKind, Name: csv.Name, UID: csv.UID,
		BlockOwnerDeletion: ptr.To(false), Controller: ptr.To(false)}
}

// rbacName is unique per (namespace, CSV, service account, scope, index): the same CSV may be
// installed in several namespaces, ClusterRoles are cluster-wide, and for a global operator OLM makes
// a ClusterRole named after each Role, so Role and ClusterRole names must never meet.
func rbacName(csv *operatorsv1alpha1.ClusterServiceVersion, sa, scope string, i int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%s/%s/%d", csv.Namespace, csv.Name, sa, scope, i)))
	return fmt.Sprintf("%s-%s", csv.Name, hex.EncodeToString(sum[:5]))
}

// CreateRequirements creates what an InstallPlan would for the CSV's install strategy: its
// ServiceAccounts, Roles/RoleBindings (permissions) and ClusterRoles/ClusterRoleBindings
// (clusterPermissions), labelled and owned the way OLM expects. Existing ServiceAccounts (from an
// earlier version of the operator) gain an owner reference to this CSV so they survive the old one.
func CreateRequirements(ctx context.Context, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion) error {
	if csv.UID == "" {
		return fmt.Errorf("CSV %s/%s has no UID: create it before its requirements", csv.Namespace, csv.Name)
	}
	strategy := csv.Spec.InstallStrategy.StrategySpec
	seen := map[string]bool{}
	for _, perms := range [][]operatorsv1alpha1.StrategyDeploymentPermissions{strategy.Permissions, strategy.ClusterPermissions} {
		for _, p := range perms {
			if p.ServiceAccountName == "" {
				return fmt.Errorf("CSV %s/%s: spec.install.spec permissions entry has an empty serviceAccountName", csv.Namespace, csv.Name)
			}
			if !seen[p.ServiceAccountName] {
				seen[p.ServiceAccountName] = true
				if err := ensureServiceAccount(ctx, c, csv, p.ServiceAccountName); err != nil {
					return err
				}
			}
		}
	}
	for i, p := range strategy.Permissions {
		if err := ensureRole(ctx, c, csv, p, i); err != nil {
			return err
		}
	}
	for i, p := range strategy.ClusterPermissions {
		if err := ensureClusterRole(ctx, c, csv, p, i); err != nil {
			return err
		}
	}
	return nil
}

func ensureServiceAccount(ctx context.Context, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion, name string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: csv.Namespace, Name: name}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, sa, func() error {
		sa.Labels = merge(sa.Labels, ownerLabels(csv))
		sa.OwnerReferences = addOwnerRef(sa.OwnerReferences, csvOwnerRef(csv))
		return nil
	})
	if err != nil {
		return fmt.Errorf("service account %s/%s for CSV %s: %w", csv.Namespace, name, csv.Name, err)
	}
	return nil
}

func ensureRole(ctx context.Context, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion, p operatorsv1alpha1.StrategyDeploymentPermissions, i int) error {
	name := rbacName(csv, p.ServiceAccountName, "namespace", i)
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: csv.Namespace, Name: name, Labels: ownerLabels(csv),
			OwnerReferences: []metav1.OwnerReference{csvOwnerRef(csv)}}
	}
	role := &rbacv1.Role{ObjectMeta: meta()}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, role, func() error { role.Rules = p.Rules; return nil }); err != nil {
		return fmt.Errorf("role %s/%s for CSV %s: %w", csv.Namespace, name, csv.Name, err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: meta()}
	_, err := controllerutil.CreateOrUpdate(ctx, c, rb, func() error {
		rb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
		rb.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: csv.Namespace, Name: p.ServiceAccountName}}
		return nil
	})
	if err != nil {
		return fmt.Errorf("role binding %s/%s for CSV %s: %w", csv.Namespace, name, csv.Name, err)
	}
	return nil
}

func ensureClusterRole(ctx context.Context, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion, p operatorsv1alpha1.StrategyDeploymentPermissions, i int) error {
	name := rbacName(csv, p.ServiceAccountName, "cluster", i)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ownerLabels(csv)}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, role, func() error { role.Rules = p.Rules; return nil }); err != nil {
		return fmt.Errorf("cluster role %s for CSV %s/%s: %w", name, csv.Namespace, csv.Name, err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: ownerLabels(csv)}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, crb, func() error {
		crb.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
		crb.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: csv.Namespace, Name: p.ServiceAccountName}}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cluster role binding %s for CSV %s/%s: %w", name, csv.Namespace, csv.Name, err)
	}
	return nil
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func addOwnerRef(refs []metav1.OwnerReference, ref metav1.OwnerReference) []metav1.OwnerReference {
	for _, r := range refs {
		if r.UID == ref.UID {
			return refs
		}
	}
	return append(refs, ref)
}
