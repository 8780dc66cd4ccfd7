package extensioncleanup_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// OLM v1 deployed after the controller started, removed, and deployed again (a shared cluster whose
// last user removes OLM v1, an OLM v1 reinstall): an opted-in ClusterExtension made each time must
// get the finalizer promptly. Deleted before it has it, it is OLM v1's plain uninstall.
func TestServedLaterAndAgain(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: a control plane")
	}
	ctx := t.Context()
	crd := clusterExtensionCRD(t)
	p, c := envtest.ForParallelTest(ctx, t, envtest.WithName("extensioncleanup-served"), envtest.WithoutOLM())
	if err := c.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: extensioncleanup.DefaultHolderName}}); err != nil {
		t.Fatal(err)
	}
	e := &env{p: p, c: c}
	e.start(ctx, t, extensioncleanup.Options{})
	for round, what := range []string{"served after the controller started", "served again after its CRD was deleted"} {
		if err := c.Create(ctx, crd.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		ce := olmv1.ClusterExtension("served", "widget-system", "installer", "widget-operator", "0.1.0")
		ce.SetAnnotations(map[string]string{extensioncleanup.UninstallAnnotation: extensioncleanup.ModeDeleteOperands})
		if err := intervals.Wait(ctx, intervals.CRDUsable, func() (bool, string) {
			err := c.Create(ctx, ce.DeepCopy())
			return err == nil || apierrors.IsAlreadyExists(err), errString(err)
		}); err != nil {
			t.Fatal(err)
		}
		created := time.Now()
		// The controller looks for the API every second here (5 s in Main), and a watch broken by the
		// CRD's deletion must resume: 15 s bounds both.
		if err := intervals.Wait(ctx, intervals.SpecStep, func() (bool, string) {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(extensioncleanup.ClusterExtensionGVK)
			if err := c.Get(ctx, client.ObjectKey{Name: "served"}, live); err != nil {
				return false, err.Error()
			}
			return slices.Contains(live.GetFinalizers(), extensioncleanup.Finalizer), "finalizers " + strings.Join(live.GetFinalizers(), ",")
		}, intervals.Within(15*time.Second)); err != nil {
			t.Fatalf("round %d (%s): the controller did not take the opted-in ClusterExtension: %v", round, what, err)
		}
		t.Logf("%s: finalizer after %s", what, time.Since(created).Round(time.Millisecond))
		// Opted out, the finalizer goes; then the ClusterExtension and its CRD.
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(extensioncleanup.ClusterExtensionGVK)
		if err := c.Get(ctx, client.ObjectKey{Name: "served"}, live); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(live.DeepCopy())
		live.SetAnnotations(nil)
		if err := c.Patch(ctx, live, patch); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, live); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, crd.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		if err := intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
			err := c.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
			return apierrors.IsNotFound(err), "CRD " + crd.Name + " still there: " + errString(err)
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// clusterExtensionCRD is OLM v1's ClusterExtension CRD, from the module the build uses (kube.ReadCRDs).
func clusterExtensionCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	paths, err := olmv1.CRDPaths()
	if err != nil {
		t.Skipf("OLM v1's module: %v", err)
	}
	crds, err := kube.ReadCRDs(paths...)
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if crd.Spec.Names.Kind == "ClusterExtension" {
			return crd
		}
	}
	t.Fatalf("no ClusterExtension CRD among %v", paths)
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
