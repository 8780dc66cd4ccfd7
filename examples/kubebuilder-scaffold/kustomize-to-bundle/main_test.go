package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	"sigs.k8s.io/yaml"
)

// testdata holds `kustomize build config/default` and `config/samples` of the scaffold run.sh makes
// (kubebuilder v4.16.0: init, create api, create webhook --defaulting --programmatic-validation).
func generate(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	def, err := os.ReadFile("testdata/config-default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	samples, err := os.ReadFile("testdata/samples.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(Input{Package: "memcached-scaffold", Version: "0.0.1", Image: "example.com/memcached-scaffold:v0.0.1", Default: def, Samples: samples})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	return dir, files
}

func TestTheBundlePassesOperatorFrameworkValidation(t *testing.T) {
	dir, _ := generate(t)
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range validation.DefaultBundleValidators.Validate(b.ObjectsToValidate()...) {
		for _, e := range r.Errors {
			t.Errorf("%s: %v", r.Name, e)
		}
	}
}

func TestWhatTheCSVStandsForIsNotShippedAsItIs(t *testing.T) {
	_, files := generate(t)
	var names []string
	for p := range files {
		names = append(names, p)
	}
	slices.Sort(names)
	want := []string{
		"manifests/cache.scaffold.example.com_memcacheds.yaml",
		"manifests/memcached-scaffold-controller-manager-metrics-service_v1_service.yaml",
		"manifests/memcached-scaffold-memcached-admin-role_rbac.authorization.k8s.io_v1_clusterrole.yaml",
		"manifests/memcached-scaffold-memcached-editor-role_rbac.authorization.k8s.io_v1_clusterrole.yaml",
		"manifests/memcached-scaffold-memcached-viewer-role_rbac.authorization.k8s.io_v1_clusterrole.yaml",
		"manifests/memcached-scaffold-metrics-reader_rbac.authorization.k8s.io_v1_clusterrole.yaml",
		"manifests/memcached-scaffold.clusterserviceversion.yaml",
		"metadata/annotations.yaml",
	}
	if !slices.Equal(names, want) {
		t.Errorf("files:\n  %s\nwant (no Namespace, ServiceAccount, bound roles and bindings, webhook Service, cert-manager objects):\n  %s",
			strings.Join(names, "\n  "), strings.Join(want, "\n  "))
	}
	for p, data := range files {
		if strings.Contains(string(data), "namespace: memcached-scaffold-system") {
			t.Errorf("%s keeps kustomize's namespace: OLM installs in the OperatorGroup's", p)
		}
	}
}

func TestTheCSV(t *testing.T) {
	_, files := generate(t)
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(files["manifests/memcached-scaffold.clusterserviceversion.yaml"], csv); err != nil {
		t.Fatal(err)
	}
	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deps) != 1 || deps[0].Name != "memcached-scaffold-controller-manager" {
		t.Fatalf("deployments: %+v", deps)
	}
	if img := deps[0].Spec.Template.Spec.Containers[0].Image; img != "example.com/memcached-scaffold:v0.0.1" {
		t.Errorf("image %s, want the -image in place of controller:latest", img)
	}
	perms := csv.Spec.InstallStrategy.StrategySpec
	if len(perms.Permissions) != 1 || len(perms.Permissions[0].Rules) != 3 {
		t.Errorf("permissions (the leader election Role): %+v", perms.Permissions)
	}
	if len(perms.ClusterPermissions) != 1 || perms.ClusterPermissions[0].ServiceAccountName != "memcached-scaffold-controller-manager" ||
		len(perms.ClusterPermissions[0].Rules) != 5 {
		t.Errorf("clusterPermissions (manager-role and metrics-auth-role): %+v", perms.ClusterPermissions)
	}
	hooks := csv.Spec.WebhookDefinitions
	if len(hooks) != 2 {
		t.Fatalf("webhookdefinitions: %+v", hooks)
	}
	for _, h := range hooks {
		if h.DeploymentName != deps[0].Name || h.ContainerPort != 443 || h.TargetPort == nil || h.TargetPort.IntValue() != 9443 ||
			h.WebhookPath == nil || len(h.Rules) != 1 || h.SideEffects == nil {
			t.Errorf("webhook %s: %+v", h.GenerateName, h)
		}
	}
	if owned := csv.Spec.CustomResourceDefinitions.Owned; len(owned) != 1 || owned[0].Name != "memcacheds.cache.scaffold.example.com" || owned[0].Version != "v1alpha1" {
		t.Errorf("owned CRDs: %+v", owned)
	}
	if !strings.Contains(csv.Annotations["alm-examples"], `"name": "memcached-sample"`) {
		t.Errorf("alm-examples: %s", csv.Annotations["alm-examples"])
	}
}
