package olmv1

import (
	"context"
	"errors"
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

// With the operator's log, a CR its operator did not finalize carries the last error the operator
// logged about it, else its last line about it, else how the log ended; a finalized one needs no log,
// and it is read once.
func TestAnUnfinalizedCRQuotesItsOperatorsLastErrorAboutIt(t *testing.T) {
	mapper, widget := teamAWidgets()
	stuck, lost, done, quiet := widget("stuck", true), widget("lost", false), widget("done", false), widget("quiet", true)
	silent := widget("silent", true)
	cl := fake.NewClientBuilder().WithRESTMapper(mapper).WithObjects(stuck, quiet, silent).Build()
	log := `{"level":"error","msg":"Reconciler error","namespace":"team-a","name":"stuck","error":"widgets.g.example \"stuck\" is forbidden"}` + "\n" +
		`{"level":"error","msg":"Reconciler error","namespace":"team-a","name":"lost","error":"records: connection refused"}` + "\n" +
		`{"level":"info","msg":"removed finalizer","namespace":"team-a","name":"quiet"}` + "\n"
	reads := 0
	finalized := func(_ context.Context, _ client.Client, o *unstructured.Unstructured) error {
		if o.GetName() == "done" {
			return nil
		}
		return errors.New("its record is still there")
	}
	vs, err := Judge(context.Background(), cl, []*unstructured.Unstructured{done, stuck, lost, quiet, silent}, finalized,
		OperatorLog(func() (string, error) { reads++; return log, nil }))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"done":   "gone, its finalizer's work done",
		"stuck":  `its operator's last error about it: Reconciler error: widgets.g.example "stuck" is forbidden`,
		"lost":   "its operator's last error about it: Reconciler error: records: connection refused",
		"quiet":  "its operator logged no error about it, its last line about it: removed finalizer",
		"silent": `its operator logged nothing about it, and its log ends: removed finalizer`,
	}
	for _, v := range vs {
		if !strings.HasSuffix(v.Detail, want[v.Name]) {
			t.Errorf("%s: detail %q, want it to end with %q", v.Name, v.Detail, want[v.Name])
		}
		if v.Name == "done" && strings.Contains(v.Detail, "operator") {
			t.Errorf("done: detail %q quotes the operator of a CR it finalized", v.Detail)
		}
	}
	if reads != 1 {
		t.Errorf("the operator's log was read %d times, want once", reads)
	}
}

// A log that could not be read is said so, not taken for an operator that logged nothing.
func TestAnUnreadOperatorLogIsSaidSo(t *testing.T) {
	mapper, widget := teamAWidgets()
	w := widget("w1", true)
	cl := fake.NewClientBuilder().WithRESTMapper(mapper).WithObjects(w).Build()
	vs, err := Judge(context.Background(), cl, []*unstructured.Unstructured{w},
		func(context.Context, client.Client, *unstructured.Unstructured) error { return nil },
		OperatorLog(func() (string, error) { return "", errors.New("open op_w.log: no such file or directory") }))
	if err != nil {
		t.Fatal(err)
	}
	if want := OperatorLogUnread + ": open op_w.log: no such file or directory"; len(vs) != 1 || !strings.HasSuffix(vs[0].Detail, want) {
		t.Errorf("verdicts %v, want one ending with %q", vs, want)
	}
}

// With the audit log, a CR removed before its operator ran names the write that let it go, found under
// the plural its mapping gives, or, its CRD gone, the default plural; a finalized CR needs no log, an
// unread log is said so, and the log is read once.
func TestAnUnfinalizedCRNamesTheWriteThatLetItGo(t *testing.T) {
	widgets := schema.GroupVersionKind{Group: "g.example", Version: "v1", Kind: "Widget"}
	mice := schema.GroupVersionKind{Group: "g.example", Version: "v1", Kind: "Mouse"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.AddSpecific(mice, mice.GroupVersion().WithResource("mice"), mice.GroupVersion().WithResource("mouse"), meta.RESTScopeNamespace)
	cr := func(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(gvk)
		o.SetNamespace("team-a")
		o.SetName(name)
		return o
	}
	write := func(resource, name, user, at string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"patch","user":{"username":"` + user +
			`"},"userAgent":"kubectl/v1.37.1 (linux/amd64)","objectRef":{"resource":"` + resource + `","namespace":"team-a","name":"` + name +
			`","apiGroup":"g.example","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-04T10:00:` + at + `.000000Z"}`
	}
	log := write("widgets", "w1", "jane", "01") + "\n" + write("mice", "m1", "system:serviceaccount:ops:mouse-operator", "02") + "\n"
	reads := 0
	unfinalized := func(_ context.Context, _ client.Client, o *unstructured.Unstructured) error {
		if o.GetName() == "done" {
			return nil
		}
		return errors.New("its record is still there")
	}
	cl := fake.NewClientBuilder().WithRESTMapper(mapper).Build()
	vs, err := Judge(context.Background(), cl, []*unstructured.Unstructured{cr(widgets, "done"), cr(widgets, "w1"), cr(mice, "m1"), cr(widgets, "w2")},
		unfinalized, AuditLog(func() ([]byte, error) { reads++; return []byte(log), nil }))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"done": "gone, its finalizer's work done",
		"w1":   "; the write that let it go: patch by jane, kubectl/v1.37.1 at 10:00:01.000",
		"m1":   "; the write that let it go: patch by system:serviceaccount:ops:mouse-operator, kubectl/v1.37.1 at 10:00:02.000",
		"w2":   "; the API server's audit log has no write of it (as widgets.g.example)",
	}
	for _, v := range vs {
		if !strings.HasSuffix(v.Detail, want[v.Name]) {
			t.Errorf("%s: detail %q, want it to end with %q", v.Name, v.Detail, want[v.Name])
		}
	}
	if reads != 1 {
		t.Errorf("the audit log was read %d times, want once", reads)
	}
	vs, err = Judge(context.Background(), cl, []*unstructured.Unstructured{cr(widgets, "w1")}, unfinalized,
		AuditLog(func() ([]byte, error) { return nil, errors.New("open audit.log: no such file or directory") }))
	if err != nil {
		t.Fatal(err)
	}
	if want := AuditLogUnread + ": open audit.log: no such file or directory"; len(vs) != 1 || !strings.HasSuffix(vs[0].Detail, want) {
		t.Errorf("verdicts %v, want one ending with %q", vs, want)
	}
}

// With the audit log, a CR stuck Terminating names the request that deleted it; one no request deleted
// (the API server did, for its CRD's deletion) says nothing more.
func TestAStuckCRNamesTheRequestThatDeletedIt(t *testing.T) {
	mapper, widget := teamAWidgets()
	byJane, byServer := widget("by-jane", true), widget("by-server", true)
	cl := fake.NewClientBuilder().WithRESTMapper(mapper).WithObjects(byJane, byServer).Build()
	log := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"delete","user":{"username":"jane"},` +
		`"objectRef":{"resource":"widgets","namespace":"team-a","name":"by-jane","apiGroup":"g.example","apiVersion":"v1"},` +
		`"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-04T10:00:01.000000Z"}` + "\n"
	vs, err := Judge(context.Background(), cl, []*unstructured.Unstructured{byJane, byServer},
		func(context.Context, client.Client, *unstructured.Unstructured) error { return nil },
		AuditLog(func() ([]byte, error) { return []byte(log), nil }))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		says := strings.Contains(v.Detail, "the request that deleted it: delete by jane")
		if v.Verdict != StuckTerminating || says != (v.Name == "by-jane") {
			t.Errorf("%s: %s, %q; want stuck Terminating, naming jane's delete only for by-jane", v.Name, v.Verdict, v.Detail)
		}
	}
}

// teamAWidgets is a mapper that knows g.example's Widget, and a maker of Widgets in team-a, deleting ones
// with a finalizer and a deletionTimestamp.
func teamAWidgets() (meta.RESTMapper, func(name string, deleting bool) *unstructured.Unstructured) {
	gvk := schema.GroupVersionKind{Group: "g.example", Version: "v1", Kind: "Widget"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	return mapper, func(name string, deleting bool) *unstructured.Unstructured {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(gvk)
		w.SetNamespace("team-a")
		w.SetName(name)
		if deleting {
			w.SetFinalizers([]string{"g.example/records"})
			w.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		}
		return w
	}
}
