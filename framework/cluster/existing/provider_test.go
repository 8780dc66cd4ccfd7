package existing

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	crdconfig "github.com/cleanup-e2e/cleanup-e2e/config/crd"
	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/operandcleanup"
)

// Without OLM's CRDs the provider says OLM is missing and why it cannot install it.
func TestOLMAbsentIsAClearError(t *testing.T) {
	p := &Provider{opts: defaults(), c: fake.NewClientBuilder().WithScheme(kube.MustScheme()).Build()}
	err := p.ensureOLM(context.Background())
	if err == nil {
		t.Fatal("ensureOLM succeeded on a cluster without OLM")
	}
	for _, want := range []string{"OLM is not installed", "clusterserviceversions.operators.coreos.com",
		"does not install OLM", "operator-sdk olm install", "PROVIDER=envtest"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// Against an envtest cluster that has OLM and the operand-cleanup controller's Namespace (made by
// someone else) but not the controller: the provider detects OLM and installs only the missing pieces
// (and, asked to, the ClusterOperator CRD); a second provider (another run, or Ginkgo process 2) reuses
// the controller and creates nothing; Stop removes exactly what the first one created.
func TestInstallsOnlyWhatIsMissingAndRemovesOnlyThat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	coCRD, err := crdconfig.ClusterOperator()
	if err != nil {
		t.Fatal(err)
	}
	registry := localruntime.NewRegistry(map[string]localruntime.Entrypoint{operandcleanupconfig.Image: operandcleanup.Main})
	env, c := envtest.ForTest(ctx, t, envtest.WithName("existing-test"), envtest.WithRegistry(registry))
	theirs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operandcleanupconfig.Namespace, Labels: map[string]string{"owner": "someone-else"}}}
	if err := c.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}

	p, err := New(ctx, WithName("first"), WithLogger(testr.New(t).WithName("first")), WithWorkRoot(t.TempDir()), WithClusterOperatorCRD())
	if err != nil {
		t.Fatal(err)
	}
	d := p.Detected()
	if !d.OLM || d.OperandCleanup || d.ClusterOperatorCRD {
		t.Errorf("detected %+v, want OLM, no operand-cleanup controller, no ClusterOperator CRD", d)
	}
	objs, _ := operandcleanupconfig.Objects()
	want := []string{"CustomResourceDefinition " + coCRD.Name}
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			want = append(want, createdObject{gvk: o.GroupVersionKind(), namespace: o.GetNamespace(), name: o.GetName()}.String())
		}
	}
	if got := p.Created(); !slices.Equal(got, want) {
		t.Errorf("created %v, want exactly the controller's manifests %v", got, want)
	}
	dep := types.NamespacedName{Namespace: operandcleanupconfig.Namespace, Name: operandcleanupconfig.Deployment}
	if err := kube.WaitDeploymentAvailable(ctx, c, dep, 10*time.Second); err != nil {
		t.Errorf("controller not available after New: %v", err)
	}
	if data, err := os.ReadFile(p.KubeconfigPath()); err != nil || !strings.Contains(string(data), strings.TrimSuffix(env.RESTConfig().Host, "/")) {
		t.Errorf("kubeconfig for child processes %s: %v (does not name the server %s)", p.KubeconfigPath(), err, env.RESTConfig().Host)
	}

	second, err := New(ctx, WithName("second"), WithLogger(testr.New(t).WithName("second")), WithWorkRoot(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if d := second.Detected(); !d.OperandCleanup || len(second.Created()) != 0 {
		t.Errorf("second provider detected %+v and created %v; want the controller found and nothing created", d, second.Created())
	}
	if err := second.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, dep, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}); err != nil {
		t.Fatalf("the second provider's Stop touched the controller it did not create: %v", err)
	}

	artifacts := t.TempDir()
	if err := p.CollectArtifacts(ctx, artifacts); err != nil {
		t.Logf("collect artifacts: %v", err) // envtest has no pods; events may be empty
	}
	if _, err := os.Stat(filepath.Join(artifacts, "provider.txt")); err != nil {
		t.Errorf("no provider.txt in artifacts: %v", err)
	}

	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), u); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s still exists after Stop (err %v)", o.GetKind(), o.GetName(), err)
		}
	}
	if err := c.Get(ctx, types.NamespacedName{Name: coCRD.Name}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterOperator CRD the run created is still there (err %v)", err)
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(theirs), ns); err != nil || ns.UID != theirs.UID || ns.DeletionTimestamp != nil {
		t.Errorf("the Namespace the run did not create was touched: %v (deleting: %v)", err, ns.DeletionTimestamp)
	}
	if ok, err := olm.Reconciling(ctx, c); !ok || err != nil {
		t.Errorf("OLM (not the run's) no longer reconciles after Stop: %v %v", ok, err)
	}
}
