package specs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
)

// A CSV laid out as operator-sdk's `make bundle` writes one for a kubebuilder go/v4 operator with a
// validating and a defaulting webhook, the webhook certificate's flag and volume included.
const webhookBundleCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: memcached-operator.v0.0.1
spec:
  displayName: Memcached Operator
  installModes:
  - supported: true
    type: AllNamespaces
  install:
    strategy: deployment
    spec:
      deployments:
      - name: memcached-operator-controller-manager
        spec:
          selector:
            matchLabels:
              control-plane: controller-manager
          template:
            metadata:
              labels:
                control-plane: controller-manager
            spec:
              containers:
              - name: manager
                image: example.com/memcached-operator:v0.0.1
                args:
                - --metrics-bind-address=:8443
                - --leader-elect
                - --webhook-cert-path=/tmp/k8s-webhook-server/serving-certs
                - --webhook-cert-name
                - tls.crt
                env:
                - name: MEMCACHED_IMAGE
                  value: memcached:1.6.26-alpine3.19
                - name: ENABLE_WEBHOOKS
                  value: "true"
                volumeMounts:
                - name: webhook-certs
                  mountPath: /tmp/k8s-webhook-server/serving-certs
                  readOnly: true
                - name: config
                  mountPath: /etc/op
              volumes:
              - name: webhook-certs
                secret:
                  secretName: webhook-server-cert
              - name: config
                configMap:
                  name: op-config
  webhookdefinitions:
  - generateName: vmemcached-v1alpha1.kb.io
    type: ValidatingAdmissionWebhook
    deploymentName: memcached-operator-controller-manager
    containerPort: 443
    targetPort: 9443
  - generateName: mmemcached-v1alpha1.kb.io
    type: MutatingAdmissionWebhook
    deploymentName: memcached-operator-controller-manager
    containerPort: 443
    targetPort: 9443
`

func TestWithoutWebhooksDropsThemAndWhatServesThem(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := filepath.Join(t.TempDir(), "bundle")
	for path, content := range map[string]string{
		"metadata/annotations.yaml":                               "annotations:\n  operators.operatorframework.io.bundle.package.v1: memcached-operator\n",
		"manifests/memcached-operator.clusterserviceversion.yaml": webhookBundleCSV,
		"manifests/webhook-service.yaml":                          "apiVersion: v1\nkind: Service\nmetadata:\n  name: memcached-operator-webhook-service\nspec:\n  ports:\n  - port: 443\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := WithoutWebhooks(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundles.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b.CSV.Spec.WebhookDefinitions); n != 0 {
		t.Errorf("%d webhookdefinitions left", n)
	}
	pod := b.CSV.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec
	ctr := pod.Containers[0]
	if want := []string{"--metrics-bind-address=:8443", "--leader-elect"}; !slices.Equal(ctr.Args, want) {
		t.Errorf("args %q, want %q", ctr.Args, want)
	}
	env := map[string]string{}
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
	}
	if env["ENABLE_WEBHOOKS"] != "false" || env["MEMCACHED_IMAGE"] != "memcached:1.6.26-alpine3.19" || len(env) != 2 {
		t.Errorf("env %v, want ENABLE_WEBHOOKS=false and the rest kept", env)
	}
	if len(ctr.VolumeMounts) != 1 || ctr.VolumeMounts[0].Name != "config" || len(pod.Volumes) != 1 || pod.Volumes[0].Name != "config" {
		t.Errorf("mounts %v, volumes %v: want only the config volume left", ctr.VolumeMounts, pod.Volumes)
	}
	if len(b.Others) != 1 || b.Package() != "memcached-operator" {
		t.Errorf("the other manifests and the metadata must be kept: %d others, package %q", len(b.Others), b.Package())
	}
	// The same bundle gives the same copy; the original is untouched.
	if again, err := WithoutWebhooks(dir); err != nil || again != out {
		t.Errorf("second call: %q, %v; want %q", again, err, out)
	}
	if orig, _ := os.ReadFile(filepath.Join(dir, "manifests/memcached-operator.clusterserviceversion.yaml")); !strings.Contains(string(orig), "webhookdefinitions") {
		t.Error("the original bundle was changed")
	}
	// On envtest the copy passes the check that refuses webhooks.
	if err := supports(noWebhooks{}, b.CSV); err != nil {
		t.Error(err)
	}
}
