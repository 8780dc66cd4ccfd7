package olmv1

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A CR stuck Terminating says when its CRD's deletion deleted it, so a reader of the verdict sees who
// did: the CRD's deletion when the CR's is not older, not when a user deleted the CR before.
func TestAStuckCRNamesTheCRDDeletionThatDeletedIt(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "g.example", Version: "v1", Kind: "Widget"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crdAt := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	for _, c := range []struct {
		name        string
		crdDeleting bool
		crAt        time.Time
		want        []string // in the detail; none of notWant
		notWant     []string
	}{
		{name: "deleted with its CRD", crdDeleting: true, crAt: crdAt.Time,
			want: []string{"its CRD widgets.g.example Terminating since 10:00:00", "which deleted it"}},
		{name: "deleted by a user before its CRD", crdDeleting: true, crAt: crdAt.Add(-time.Minute),
			want: []string{"its CRD widgets.g.example Terminating since 10:00:00"}, notWant: []string{"which deleted it"}},
		{name: "its CRD not being deleted", crAt: crdAt.Time, notWant: []string{"its CRD"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.g.example"}}
			if c.crdDeleting {
				crd.DeletionTimestamp, crd.Finalizers = &crdAt, []string{"customresourcecleanup.apiextensions.k8s.io"}
			}
			w := &unstructured.Unstructured{}
			w.SetGroupVersionKind(gvk)
			w.SetNamespace("team-a")
			w.SetName("w1")
			w.SetFinalizers([]string{"g.example/records"})
			w.SetDeletionTimestamp(&metav1.Time{Time: c.crAt})
			cl := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(crd, w).Build()
			vs, err := Judge(context.Background(), cl, []*unstructured.Unstructured{w}, func(context.Context, client.Client, *unstructured.Unstructured) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != 1 || vs[0].Verdict != StuckTerminating {
				t.Fatalf("verdicts %v, want one %q", vs, StuckTerminating)
			}
			for _, s := range c.want {
				if !strings.Contains(vs[0].Detail, s) {
					t.Errorf("detail %q, want it to say %q", vs[0].Detail, s)
				}
			}
			for _, s := range c.notWant {
				if strings.Contains(vs[0].Detail, s) {
					t.Errorf("detail %q, want it not to say %q", vs[0].Detail, s)
				}
			}
		})
	}
}
