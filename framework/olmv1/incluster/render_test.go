package incluster

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// Upstream's manifests, rendered: our images, no cert-manager object, the Secrets its Certificates would
// write, the CA injected into catalogd's webhook, registries.conf mounted into both managers.
func TestRender(t *testing.T) {
	if _, err := olmv1.ModuleDir(); err != nil {
		t.Skip(err)
	}
	objs, err := Render([]string{"172.18.0.1:5000"})
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("OLMV1_PRINT_MANIFESTS") == "1" {
		y, _ := Manifests(objs)
		t.Log(y)
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if strings.HasPrefix(o.GetAPIVersion(), "cert-manager.io/") {
			t.Errorf("cert-manager object left: %s %s", o.GetKind(), o.GetName())
		}
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	if objs[0].GetKind() != "Namespace" && objs[0].GetKind() != "CustomResourceDefinition" {
		t.Errorf("first object %s %s: want the namespace and CRDs first", objs[0].GetKind(), objs[0].GetName())
	}
	for _, n := range []string{"Secret/" + catalogdCertSecret, "Secret/" + operatorControllerCertSecret, "Namespace/" + olmv1.SystemNamespace,
		"CustomResourceDefinition/clusterextensions.olm.operatorframework.io", "CustomResourceDefinition/clustercatalogs.olm.operatorframework.io"} {
		if byName[n] == nil {
			t.Errorf("no %s", n)
		}
	}
	conf, _, _ := unstructured.NestedString(byName["ConfigMap/"+registriesConf].Object, "data", "registries.conf")
	if !strings.Contains(conf, `location = "172.18.0.1:5000"`) || !strings.Contains(conf, "insecure = true") {
		t.Errorf("registries.conf = %q", conf)
	}
	hooks, _, _ := unstructured.NestedSlice(byName["MutatingWebhookConfiguration/catalogd-mutating-webhook-configuration"].Object, "webhooks")
	if len(hooks) != 1 {
		t.Fatalf("catalogd's webhook configuration: %d webhooks", len(hooks))
	}
	if ca, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "caBundle"); ca == "" {
		t.Error("catalogd's webhook has no caBundle")
	}
	for name, image := range map[string]string{CatalogdDeployment: CatalogdImage, OperatorControllerDeployment: OperatorControllerImage} {
		u := byName["Deployment/"+name]
		if u == nil {
			t.Fatalf("no Deployment %s", name)
		}
		dep := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, dep); err != nil {
			t.Fatal(err)
		}
		c := dep.Spec.Template.Spec.Containers[0]
		if c.Image != image {
			t.Errorf("Deployment %s runs %s, want %s", name, c.Image, image)
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || m.MountPath == "/etc/containers"
		}
		if !mounted {
			t.Errorf("Deployment %s: registries.conf not mounted at /etc/containers (mounts %v)", name, c.VolumeMounts)
		}
		if dep.Spec.Template.Annotations[configHashAnnotation] == "" {
			t.Errorf("Deployment %s: no %s on its pod template", name, configHashAnnotation)
		}
	}
}
