package cvo

import (
	"github.com/cleanup-e2e/cleanup-e2e/framework/deleteannotation"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// The enhancement's "hypothetical removal" of the Service Catalog, through the spec library: update
// removes the component (namespace really gone, the applier's ClusterOperator Upgradeable=False
// while deletes are pending, then True), a first install of the removal release creates nothing, and
// updating a cluster that never had the component only warns.
var _ = deleteannotation.DescribeRemoval(deleteannotation.SpecInput{
	Environment: clusterUnderTest,
	Name:        "svcat",
	Labels:      []string{"cvo"},
	Payloads:    svcatPayloads,
	Outside:     svcatOutside,
})

const svcat = "0000_50_cluster-svcat-apiserver-operator_"

// svcatPayloads mirrors cluster-svcat-apiserver-operator's manifests (file names as in the
// enhancement). Release 1.0.0 installs the component next to an unrelated one; 1.1.0 keeps the
// delete-annotated namespace, CRD, CR, ClusterRole(Binding) and ClusterOperator and drops every
// manifest of an object inside the namespace.
func svcatPayloads(id string) (installed, removal *pt.Builder) {
	ns, group := id, id+".svcat.cleanup-e2e.io"
	crd := func() obj { return pt.CRD(group, "ServiceCatalogAPIServer", "servicecatalogapiservers", false) }
	cr := func() obj { return pt.Object(group+"/v1", "ServiceCatalogAPIServer", "", "cluster") }
	clusterRoles := func() []interface{} {
		return []interface{}{
			clusterRole(id+"-svcat", rules([2]string{group, "*"})),
			clusterRoleBinding(id+"-svcat", id+"-svcat", ns, "svcat-apiserver-operator"),
		}
	}
	unrelated := func(b *pt.Builder, version string) *pt.Builder {
		return b.File("0000_50_cluster-kept-operator_00_namespace.yaml", pt.Namespace(id+"-kept")).
			File("0000_50_cluster-kept-operator_01_configmap.yaml", pt.ConfigMap(id+"-kept", "config", map[string]string{"k": "v"})).
			File("0000_50_cluster-kept-operator_02_cluster-operator.yaml", pt.ClusterOperator(id+"-kept", "operator", version))
	}
	installed = unrelated(pt.New("1.0.0"), "1.0.0").
		File(svcat+"00_namespace.yaml", pt.Namespace(ns)).
		File(svcat+"02_config.crd.yaml", crd()).
		File(svcat+"03_config.cr.yaml", cr()).
		File(svcat+"03_configmap.yaml", pt.ConfigMap(ns, "config", map[string]string{"config.yaml": "{}"})).
		File(svcat+"03_version-configmap.yaml", pt.ConfigMap(ns, "version", map[string]string{"version": "1.0.0"})).
		File(svcat+"04_roles.yaml", clusterRoles()...).
		File(svcat+"05_serviceaccount.yaml", serviceAccount(ns, "svcat-apiserver-operator")).
		File(svcat+"06_service.yaml", service(ns, "metrics")).
		File(svcat+"07_deployment.yaml", deployment(ns, "svcat-apiserver-operator", "svcat-apiserver-operator",
			"cleanup-e2e.local/svcat-apiserver-operator:v0.1.0", nil, []string{"--config=/var/run/config.yaml"})).
		File(svcat+"08_cluster-operator.yaml", pt.ClusterOperator(id+"-svcat", "operator", "1.0.0")).
		File("0000_90_cluster-svcat-apiserver-operator_00_prometheusrole.yaml",
			role(ns, "prometheus-k8s", rules([2]string{"", "pods"}))).
		File("0000_90_cluster-svcat-apiserver-operator_01_prometheusrolebinding.yaml",
			roleBinding(ns, "prometheus-k8s", "prometheus-k8s", "default"))

	var roles []interface{}
	for _, o := range clusterRoles() {
		roles = append(roles, pt.Delete(o.(obj)))
	}
	removal = unrelated(pt.New("1.1.0"), "1.1.0").
		File(svcat+"00_namespace.yaml", pt.Delete(pt.Namespace(ns))).
		File(svcat+"02_config.crd.yaml", pt.Delete(crd())).
		File(svcat+"03_config.cr.yaml", pt.Delete(cr())).
		File(svcat+"04_roles.yaml", roles...).
		File(svcat+"08_cluster-operator.yaml", pt.Delete(pt.ClusterOperator(id+"-svcat")))
	return installed, removal
}

// svcatOutside: a namespace and ConfigMap no payload knows about.
func svcatOutside(id string) []obj {
	return []obj{pt.Namespace(id + "-outside"), pt.ConfigMap(id+"-outside", "unrelated", map[string]string{"k": "v"})}
}
