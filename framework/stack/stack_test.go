package stack

import (
	"context"
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
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/crds"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/operandcleanup"
)

// Without OLM's CRDs the stack says OLM is missing and why it cannot install it.
func TestOLMAbsentIsAClearError(t *testing.T) {
	_, err := Ensure(context.Background(), Input{Components: Components{OLM: true},
		Client: fake.NewClientBuilder().WithScheme(kube.MustScheme()).Build()})
	if err == nil {
		t.Fatal("Ensure succeeded on a cluster without OLM")
	}
	for _, want := range []string{"OLM is not installed", "clusterserviceversions.operators.coreos.com",
		"does not install OLM", "operator-sdk olm install", "PROVIDER=envtest"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// The stack's tests on a cluster share one control plane (a start with OLM costs ≈ 3 s of CPU, and
// make test is CPU-bound). They run in turn and touch disjoint names: the operand-cleanup controller
// and the ClusterOperator CRD first, then the Teardown tests' groups uid.test, example.test and
// other.test and their own namespaces.
func TestOnACluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SuiteSetup)) // it starts a provider: a backstop above its start's own timeouts
	defer cancel()
	registry := localruntime.NewRegistry(map[string]localruntime.Entrypoint{operandcleanupconfig.Image: operandcleanup.Main})
	_, c := envtest.ForTest(ctx, t, envtest.WithName("stack-test"), envtest.WithRegistry(registry))
	t.Run("installs only what is missing and removes only that", func(t *testing.T) { testInstallsOnlyWhatIsMissingAndRemovesOnlyThat(ctx, t, c) })
	t.Run("Teardown leaves a recreated object", func(t *testing.T) { testTeardownLeavesARecreatedObject(ctx, t, c) })
	t.Run("Teardown removes only the run's footprint", func(t *testing.T) { testRemovesOnlyTheRunsFootprint(ctx, t, c) })
}

// Against a cluster that has OLM and the operand-cleanup controller's Namespace (made by someone
// else) but not the controller: the stack detects OLM and installs only the missing pieces (and,
// asked to, the ClusterOperator CRD); a second stack (another run, or Ginkgo process 2) reuses the
// controller and creates nothing; Teardown removes exactly what the first one created.
func testInstallsOnlyWhatIsMissingAndRemovesOnlyThat(ctx context.Context, t *testing.T, c client.Client) {
	coCRD, err := crdconfig.ClusterOperator()
	if err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operandcleanupconfig.Namespace, Labels: map[string]string{"owner": "someone-else"}}}
	if err := c.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}

	components := ForOperandCleanup()
	components.ClusterOperatorCRD = true
	// Missing, read before, names what Ensure then creates; a shared cluster's run decides by it.
	missing, disruptive, err := Missing(ctx, Input{Components: components, Client: c})
	if err != nil {
		t.Fatal(err)
	}
	first, err := Ensure(ctx, Input{Components: components, Client: c, Log: testr.New(t).WithName("first")})
	if err != nil {
		t.Fatal(err)
	}
	if created := first.Created(); !slices.Equal(missing, created) {
		t.Errorf("Missing said %v, but Ensure created %v", missing, created)
	}
	if want := []string{"CustomResourceDefinition " + coCRD.Name}; !slices.Equal(disruptive, want) {
		t.Errorf("Missing said %v is disruptive, want %v (only the ClusterOperator CRD changes the cluster for other runs)", disruptive, want)
	}
	if again, _, err := Missing(ctx, Input{Components: components, Client: c}); err != nil || len(again) > 0 {
		t.Errorf("after Ensure, Missing says %v (err %v), want nothing", again, err)
	}
	if f := first.Found(); f.OperandCleanup || f.ClusterOperatorCRD {
		t.Errorf("found %+v, want no operand-cleanup controller, no ClusterOperator CRD", f)
	}
	objs, _ := operandcleanupconfig.Objects()
	want := []string{"CustomResourceDefinition " + coCRD.Name}
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			want = append(want, entry{gvk: o.GroupVersionKind(), namespace: o.GetNamespace(), name: o.GetName()}.String())
		}
	}
	// The OLM probe namespace is the run's too when the envtest provider's own probe did not make it.
	got := slices.DeleteFunc(first.Created(), func(s string) bool { return s == "Namespace "+olm.ProbeNamespace })
	if !slices.Equal(got, want) {
		t.Errorf("created %v, want exactly the ClusterOperator CRD and the controller's manifests %v", got, want)
	}
	dep := types.NamespacedName{Namespace: operandcleanupconfig.Namespace, Name: operandcleanupconfig.Deployment}
	if err := kube.WaitDeploymentAvailable(ctx, c, dep, 10*time.Second); err != nil {
		t.Errorf("controller not available after Ensure: %v", err)
	}

	second, err := Ensure(ctx, Input{Components: ForOperandCleanup(), Client: c, Log: testr.New(t).WithName("second")})
	if err != nil {
		t.Fatal(err)
	}
	if f := second.Found(); !f.OperandCleanup || len(second.Created()) != 0 {
		t.Errorf("second stack found %+v and created %v; want the controller found and nothing created", f, second.Created())
	}
	if err := second.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, dep, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}); err != nil {
		t.Fatalf("the second stack's Teardown touched the controller it did not create: %v", err)
	}

	// On a shared cluster the disruptive part goes first, alone (framework/testenv's disruptive lock).
	if err := second.RemoveDisruptive(ctx); err != nil {
		t.Fatalf("RemoveDisruptive of a stack without the ClusterOperator CRD: %v", err)
	}
	if err := first.RemoveDisruptive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, types.NamespacedName{Name: coCRD.Name}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
		t.Errorf("RemoveDisruptive left the ClusterOperator CRD the run created (err %v)", err)
	}
	if err := c.Get(ctx, dep, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}); err != nil {
		t.Errorf("RemoveDisruptive removed more than the disruptive part: the controller's Deployment: %v", err)
	}
	if slices.Contains(first.Created(), "CustomResourceDefinition "+coCRD.Name) {
		t.Errorf("after RemoveDisruptive the stack still lists the CRD as created: %v", first.Created())
	}
	if err := first.RemoveDisruptive(ctx); err != nil {
		t.Errorf("RemoveDisruptive again: %v, want nothing to do", err)
	}

	if err := first.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), u); !apierrors.IsNotFound(err) {
			t.Errorf("%s %s still exists after Teardown (err %v)", o.GetKind(), o.GetName(), err)
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
		t.Errorf("OLM (not the run's) no longer reconciles after Teardown: %v %v", ok, err)
	}
}

// An object the stack created, deleted and recreated by someone else before Teardown, is theirs:
// the UID precondition keeps it.
func testTeardownLeavesARecreatedObject(ctx context.Context, t *testing.T, c client.Client) {
	crd := crds.Schemaless("uid.test", "things", "Thing")
	s, err := Ensure(ctx, Input{Components: Components{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}, Client: c,
		Log: testr.New(t), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Created(); !slices.Equal(got, []string{"CustomResourceDefinition " + crd.Name}) {
		t.Fatalf("created %v", got)
	}
	must(t, c.Delete(ctx, crd.DeepCopy()))
	// Waited for as the stack's Teardown waits (the ledger's waitGone, the CRD's UID as the run
	// recorded it): not 30 s, and asking the API server's CRD finalizer to retry a failed deletion
	// (finalizeagain.go) — under make test's load its backoff outlasted 30 s.
	must(t, (&ledger{c: c, log: testr.New(t), timeout: 2 * time.Minute}).waitGone(ctx, s.ledger.entries[0]))
	must(t, kube.ApplyCRDs(ctx, c, crd.DeepCopy())) // someone else's now
	if err := s.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Fatalf("Teardown deleted a CRD that was recreated by someone else (another UID): %v", err)
	}
}

// The footprint (CRDs of the named groups, the named namespaces) goes on Teardown only when the run
// created it: a CRD or namespace that was there before, a CRD of another group, and objects of kinds
// not named all stay. A CRD whose custom resources keep a finalizer is reported, not forced.
func testRemovesOnlyTheRunsFootprint(ctx context.Context, t *testing.T, c client.Client) {

	// Before the run: a CRD of the group and a namespace that are named, but not the run's.
	before := testCRD("example.test", "pres")
	preNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pre-ns"}}
	must(t, kube.ApplyCRDs(ctx, c, before))
	must(t, c.Create(ctx, preNS))

	s, err := Ensure(ctx, Input{Client: c, Log: testr.New(t), Timeout: 20 * time.Second,
		Components: Components{Footprint: Footprint{CRDGroups: []string{"example.test"}, Namespaces: []string{"pre-ns", "run-ns", "never-ns"}}}})
	if err != nil {
		t.Fatal(err)
	}

	// The run: a CRD of the group with a custom resource, one of another group, a named namespace.
	runs, other := testCRD("example.test", "runs"), testCRD("other.test", "others")
	must(t, kube.ApplyCRDs(ctx, c, runs, other))
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "run-ns"}}))
	must(t, c.Create(ctx, testCR("example.test", "Run", "default", "r1", nil)))

	if err := s.Teardown(ctx); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	for _, gone := range []client.Object{runs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "run-ns"}}} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(gone), gone); !apierrors.IsNotFound(err) {
			t.Errorf("%s was created by the run and should be gone (err %v)", gone.GetName(), err)
		}
	}
	for _, kept := range []client.Object{&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: before.Name}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: other.Name}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pre-ns"}}} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(kept), kept); err != nil || kept.GetDeletionTimestamp() != nil {
			t.Errorf("%s was not the run's to delete: err %v, deleting %v", kept.GetName(), err, kept.GetDeletionTimestamp())
		}
	}

	// A second run whose CRD keeps a custom resource with a finalizer nobody removes.
	s, err = Ensure(ctx, Input{Client: c, Log: testr.New(t), Timeout: 3 * time.Second,
		Components: Components{Footprint: Footprint{CRDGroups: []string{"example.test"}}}})
	if err != nil {
		t.Fatal(err)
	}
	stuck := testCRD("example.test", "stucks")
	must(t, kube.ApplyCRDs(ctx, c, stuck))
	cr := testCR("example.test", "Stuck", "default", "s1", []string{"example.test/never-removed"})
	must(t, c.Create(ctx, cr))
	err = s.Teardown(ctx)
	t.Logf("Teardown reported: %v", err)
	if err == nil || !strings.Contains(err.Error(), stuck.Name) || !strings.Contains(err.Error(), "Stuck default/s1 finalizers [example.test/never-removed]") {
		t.Errorf("Teardown must report the CRD it could not remove and the custom resource holding it, got %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
		t.Errorf("the blocking custom resource must not be forced away: %v", err)
	}
	cr.SetFinalizers(nil)
	must(t, c.Update(ctx, cr))
}

func testCRD(group, plural string) *apiextensionsv1.CustomResourceDefinition {
	return crds.Schemaless(group, plural, strings.ToUpper(plural[:1])+strings.TrimSuffix(plural[1:], "s"))
}

func testCR(group, kind, ns, name string, finalizers []string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(group + "/v1")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetFinalizers(finalizers)
	return u
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
