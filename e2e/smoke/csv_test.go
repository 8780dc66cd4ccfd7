package smoke

import (
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// smokeCSV is a minimal CSV for the smoke operator: one Deployment, namespaced and cluster permissions.
func smokeCSV() *operatorsv1alpha1.ClusterServiceVersion {
	labels := map[string]string{"app": "smoke-operator"}
	return &operatorsv1alpha1.ClusterServiceVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke-operator.v0.0.1"},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName: "Smoke operator",
			InstallModes: []operatorsv1alpha1.InstallMode{
				{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: true},
				{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
			InstallStrategy: operatorsv1alpha1.NamedInstallStrategy{
				StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
				StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{
					Permissions: []operatorsv1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: "smoke-operator",
						Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create"}}}}},
					ClusterPermissions: []operatorsv1alpha1.StrategyDeploymentPermissions{{ServiceAccountName: "smoke-operator",
						Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}}}}},
					DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{{
						Name: "smoke-operator",
						Spec: appsv1.DeploymentSpec{
							Replicas: ptr.To[int32](1),
							Selector: &metav1.LabelSelector{MatchLabels: labels},
							Template: corev1.PodTemplateSpec{
								ObjectMeta: metav1.ObjectMeta{Labels: labels},
								Spec: corev1.PodSpec{
									ServiceAccountName: "smoke-operator",
									Containers: []corev1.Container{{
										Name: "operator", Image: smokeImage, ImagePullPolicy: corev1.PullIfNotPresent,
										Env: []corev1.EnvVar{
											{Name: "OPERATOR_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
											{Name: "TARGETS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['olm.targetNamespaces']"}}},
										},
									}},
								},
							},
						},
					}},
				},
			},
		},
	}
}
