package olm

import (
	"context"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

func manifest(apiVersion, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

// fakeCluster serves the built-in kinds the tests use and, when withMonitoring, ServiceMonitors.
func fakeCluster(withMonitoring bool) client.Client {
	m := meta.NewDefaultRESTMapper(nil)
	for _, k := range []struct {
		gvk   schema.GroupVersionKind
		scope meta.RESTScope
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, meta.RESTScopeNamespace},
		{schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"}, meta.RESTScopeRoot},
		{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace},
	} {
		m.Add(k.gvk, k.scope)
	}
	if withMonitoring {
		m.Add(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}, meta.RESTScopeNamespace)
	}
	return fake.NewClientBuilder().WithScheme(kube.MustScheme()).WithRESTMapper(m).Build()
}

func csvWithModes() *operatorsv1alpha1.ClusterServiceVersion {
	csv := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Name: "memcached-operator.v0.0.1"}}
	csv.Spec.InstallModes = []operatorsv1alpha1.InstallMode{{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: true}}
	return csv
}

// A manifest OLM refuses (a Deployment: OLM makes those from the CSV), or of a kind the cluster does
// not serve, fails the install before anything is created, naming the manifest and what to do.
func TestBundleManifestsOLMWouldRefuseFailBeforeAnythingIsCreated(t *testing.T) {
	c := fakeCluster(false)
	_, err := InstallCSV(context.Background(), InstallCSVInput{Client: c, CSV: csvWithModes(), Namespace: "operators",
		InstallMode: operatorsv1alpha1.InstallModeTypeOwnNamespace,
		Objects: []*unstructured.Unstructured{manifest("apps/v1", "Deployment", "extra"),
			manifest("monitoring.coreos.com/v1", "ServiceMonitor", "metrics"), manifest("v1", "Service", "fine")}})
	if err == nil {
		t.Fatal("the install went on with manifests OLM would not install")
	}
	for _, want := range []string{"memcached-operator.v0.0.1", "2 manifest(s)", "Deployment extra (apps/v1): OLM does not install kind Deployment",
		"ServiceMonitor metrics (monitoring.coreos.com/v1): this cluster does not serve the kind", "install its CRD first"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "operators"}, &corev1.Namespace{}); err == nil {
		t.Error("the operator's namespace was created although the install was refused")
	}
}

// Each kind gets what OLM's InstallPlan gives it: namespace, owner reference, labels.
func TestBundleManifestsAreCreatedAsOLMCreatesThem(t *testing.T) {
	ctx := context.Background()
	c := fakeCluster(true)
	csv := csvWithModes()
	csv.Namespace, csv.UID = "operators", "csv-uid"
	objs := []*unstructured.Unstructured{manifest("v1", "Service", "metrics"), manifest("v1", "Secret", "certs"),
		manifest("rbac.authorization.k8s.io/v1", "ClusterRole", "metrics-reader"), manifest("policy/v1", "PodDisruptionBudget", "pdb"),
		manifest("scheduling.k8s.io/v1", "PriorityClass", "high"), manifest("monitoring.coreos.com/v1", "ServiceMonitor", "metrics")}
	if err := checkBundleObjects(c, csv.Name, objs); err != nil {
		t.Fatal(err)
	}
	if err := createBundleObjects(ctx, c, csv, objs); err != nil {
		t.Fatal(err)
	}
	get := func(apiVersion, kind, ns, name string) *unstructured.Unstructured {
		u := manifest(apiVersion, kind, name)
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			t.Fatalf("%s %s/%s: %v", kind, ns, name, err)
		}
		return u
	}
	owned := func(u *unstructured.Unstructured) bool {
		refs := u.GetOwnerReferences()
		return len(refs) == 1 && refs[0].Kind == "ClusterServiceVersion" && refs[0].UID == "csv-uid" &&
			refs[0].BlockOwnerDeletion != nil && !*refs[0].BlockOwnerDeletion
	}
	for _, u := range []*unstructured.Unstructured{get("v1", "Service", "operators", "metrics"), get("v1", "Secret", "operators", "certs")} {
		if !owned(u) || u.GetLabels()[LabelManaged] != "true" {
			t.Errorf("%s: owner refs %v, labels %v; want a non-blocking CSV owner and olm.managed", u.GetKind(), u.GetOwnerReferences(), u.GetLabels())
		}
	}
	if cr := get("rbac.authorization.k8s.io/v1", "ClusterRole", "", "metrics-reader"); cr.GetLabels()[LabelManaged] != "true" || len(cr.GetOwnerReferences()) > 0 {
		t.Errorf("ClusterRole labels %v refs %v, want olm.managed and no owner reference", cr.GetLabels(), cr.GetOwnerReferences())
	}
	for _, u := range []*unstructured.Unstructured{get("policy/v1", "PodDisruptionBudget", "operators", "pdb"), get("monitoring.coreos.com/v1", "ServiceMonitor", "operators", "metrics")} {
		if !owned(u) {
			t.Errorf("%s: owner refs %v, want a non-blocking CSV owner", u.GetKind(), u.GetOwnerReferences())
		}
	}
	pc := get("scheduling.k8s.io/v1", "PriorityClass", "", "high")
	if l := pc.GetLabels(); l[LabelOwner] != csv.Name || l[LabelOwnerNamespace] != "operators" || l[LabelOwnerKind] != "ClusterServiceVersion" {
		t.Errorf("PriorityClass labels %v, want the olm.owner labels", l)
	}
}
