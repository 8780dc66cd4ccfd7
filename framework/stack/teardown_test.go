package stack

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// Teardown deletes what the specs left (the footprint) first, then what the stack created, and only
// then waits: a namespace takes ≥ 5 s to go on a real cluster, so a wait between the two cost a run
// that owns both one namespace deletion more (TestOnACluster's Teardown subtests check the same
// removals on a control plane).
func TestTeardownDeletesEverythingBeforeItWaits(t *testing.T) {
	stackNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "operand-cleanup", UID: "stack-ns"}}
	recordsNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "records", UID: "records-ns"}}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.x.test", UID: "widgets-crd"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "x.test"}}
	var calls []string
	c := fake.NewClientBuilder().WithScheme(kube.MustScheme()).WithObjects(stackNS, recordsNS, crd).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			calls = append(calls, "delete "+obj.GetName())
			return c.Delete(ctx, obj, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			calls = append(calls, "get "+key.Name)
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	log := logr.Discard()
	s := &Stack{
		in:        Input{Components: Components{Footprint: Footprint{CRDGroups: []string{"x.test"}, Namespaces: []string{"records"}}}, Log: log},
		c:         c,
		footprint: map[string]bool{},
		ledger: &ledger{c: c, log: log, timeout: 5 * time.Second, entries: []entry{
			{gvk: corev1.SchemeGroupVersion.WithKind("Namespace"), name: stackNS.Name, uid: stackNS.UID}}},
	}
	if err := s.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var deletes []string
	firstWait := -1
	for i, call := range calls {
		if strings.HasPrefix(call, "delete ") {
			deletes = append(deletes, call)
			if firstWait >= 0 {
				t.Errorf("%q after the first wait (%q): Teardown waited before it deleted everything; calls: %q", call, calls[firstWait], calls)
			}
		} else if len(deletes) > 0 && firstWait < 0 { // reads before the first delete are the footprint's
			firstWait = i
		}
	}
	want := []string{"delete records", "delete widgets.x.test", "delete operand-cleanup"}
	if !slices.Equal(deletes, want) {
		t.Fatalf("deletes %q, want %q (the footprint first, newest first, then the stack's)", deletes, want)
	}
	for _, name := range []string{"operand-cleanup", "records"} {
		if err := c.Get(context.Background(), types.NamespacedName{Name: name}, &corev1.Namespace{}); err == nil {
			t.Errorf("namespace %s still there after Teardown", name)
		}
	}
}
