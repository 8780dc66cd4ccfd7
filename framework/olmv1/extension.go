package olmv1

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// ClusterCatalog is a ClusterCatalog of the image ref (polled hourly: a test pushes before it creates).
func ClusterCatalog(name, ref string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"source": map[string]any{"type": "Image",
			"image": map[string]any{"ref": ref, "pollIntervalMinutes": int64(60)}}},
	}}
	u.SetGroupVersionKind(ClusterCatalogGVK)
	u.SetName(name)
	return u
}

// ClusterExtension installs package pkg at version into namespace ns with installer ServiceAccount sa.
func ClusterExtension(name, ns, sa, pkg, version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"namespace":      ns,
			"serviceAccount": map[string]any{"name": sa},
			"source": map[string]any{"sourceType": "Catalog",
				"catalog": map[string]any{"packageName": pkg, "version": version}},
		},
	}}
	u.SetGroupVersionKind(ClusterExtensionGVK)
	u.SetName(name)
	return u
}

// CreateInstaller creates namespace ns and in it ServiceAccount sa bound to cluster-admin: upstream's
// tutorials narrow it to what the bundle needs; a test of uninstall wants no install to fail on RBAC.
// OLM v1 never removes either (docs/olm-v1.md).
func CreateInstaller(ctx context.Context, c client.Client, ns, sa string) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: InstallerBinding(ns, sa)},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}},
	}
	for _, o := range objs {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, o)); err != nil {
			return fmt.Errorf("installer %s/%s: %w", ns, sa, err)
		}
	}
	return nil
}

// WaitCondition waits (the named wait n) until obj (a ClusterCatalog or ClusterExtension) has condition
// typ True, saying on timeout what the condition was.
func WaitCondition(ctx context.Context, c client.Client, n intervals.Name, obj *unstructured.Unstructured, typ string) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	err := intervals.Wait(ctx, n, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
			return false, err.Error()
		}
		conds, err := Conditions(live)
		if err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(conds, typ)
		if cond == nil {
			return false, fmt.Sprintf("no %s condition yet (conditions %v)", typ, conds)
		}
		if cond.Status == metav1.ConditionTrue {
			return true, ""
		}
		// Every condition: the cause is often in another one (Progressing=True Retrying says why
		// Installed is False); helm's reason for an install conflict, which operator-controller hides.
		if why := ExplainInstallConflict(ctx, c, live, conds); why != "" {
			return false, DescribeConditions(conds) + "; " + why
		}
		return false, DescribeConditions(conds)
	})
	if err != nil {
		return fmt.Errorf("%s %s to be %s: %w", obj.GetKind(), obj.GetName(), typ, err)
	}
	return nil
}

// Conditions are the status conditions of a ClusterExtension or ClusterCatalog.
func Conditions(u *unstructured.Unstructured) ([]metav1.Condition, error) {
	raw, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	if err != nil {
		return nil, err
	}
	var out []metav1.Condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		var cond metav1.Condition
		if err := runtimeFromUnstructured(m, &cond); err != nil {
			return nil, err
		}
		out = append(out, cond)
	}
	return out, nil
}

// CatalogNameLabel is the label catalogd's webhook puts on every ClusterCatalog (its name): what a
// ClusterExtension selects a catalog by.
const CatalogNameLabel = "olm.operatorframework.io/metadata.name"

// SelectCatalog makes ce resolve its package from the ClusterCatalog named catalog only (several
// catalogs may serve the same package).
func SelectCatalog(ce *unstructured.Unstructured, catalog string) {
	_ = unstructured.SetNestedStringMap(ce.Object, map[string]string{CatalogNameLabel: catalog},
		"spec", "source", "catalog", "selector", "matchLabels")
}

// InstallerBinding is the name of the ClusterRoleBinding CreateInstaller makes for ServiceAccount ns/sa.
func InstallerBinding(ns, sa string) string { return ns + "-" + sa + "-cluster-admin" }

// DescribeConditions renders conditions as "Type=Status Reason: message; …" for a failure message.
func DescribeConditions(conds []metav1.Condition) string {
	if len(conds) == 0 {
		return "no conditions yet"
	}
	out := make([]string, len(conds))
	for i, c := range conds {
		out[i] = fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return strings.Join(out, "; ")
}
