package existing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/fixtures/crds"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// The run's leftovers (CRDs of the named groups, the named namespaces) go on Stop only when the run
// created them: a CRD or namespace that was there before, a CRD of another group, and objects of
// kinds not named all stay. A CRD whose custom resources keep a finalizer is reported, not forced.
func TestRemovesOnlyTheRunsLeftovers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, c := envtest.ForTest(ctx, t, envtest.WithName("leftovers-test"), envtest.WithoutOLM())

	// Before the run: a CRD of the group and a namespace that are named, but not the run's.
	before := testCRD("example.test", "pres")
	preNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pre-ns"}}
	must(t, kube.ApplyCRDs(ctx, c, before))
	must(t, c.Create(ctx, preNS))

	p, err := New(ctx, WithName("leftovers"), WithLogger(testr.New(t)), WithWorkRoot(t.TempDir()),
		WithoutOLM(), WithoutOperandCleanup(), WithReadyTimeout(20*time.Second),
		WithRunLeftovers(RunLeftovers{CRDGroups: []string{"example.test"}, Namespaces: []string{"pre-ns", "run-ns", "never-ns"}}))
	if err != nil {
		t.Fatal(err)
	}

	// The run: a CRD of the group with a custom resource, one of another group, a named namespace.
	runs, other := testCRD("example.test", "runs"), testCRD("other.test", "others")
	must(t, kube.ApplyCRDs(ctx, c, runs, other))
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "run-ns"}}))
	must(t, c.Create(ctx, testCR("example.test", "Run", "default", "r1", nil)))

	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
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
	p, err = New(ctx, WithName("stuck"), WithLogger(testr.New(t)), WithWorkRoot(t.TempDir()),
		WithoutOLM(), WithoutOperandCleanup(), WithReadyTimeout(3*time.Second),
		WithRunLeftovers(RunLeftovers{CRDGroups: []string{"example.test"}}))
	if err != nil {
		t.Fatal(err)
	}
	stuck := testCRD("example.test", "stucks")
	must(t, kube.ApplyCRDs(ctx, c, stuck))
	cr := testCR("example.test", "Stuck", "default", "s1", []string{"example.test/never-removed"})
	must(t, c.Create(ctx, cr))
	err = p.Stop(ctx)
	t.Logf("Stop reported: %v", err)
	if err == nil || !strings.Contains(err.Error(), stuck.Name) || !strings.Contains(err.Error(), "Stuck default/s1 finalizers [example.test/never-removed]") {
		t.Errorf("Stop must report the CRD it could not remove and the custom resource holding it, got %v", err)
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
