package specs

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

type auditingProvider struct {
	fakeProvider
	log string
}

func (p auditingProvider) AuditLog() ([]byte, error) { return []byte(p.log), nil }

// An operand is not kept when it is gone or only being deleted (once its operator is gone it would stay
// Terminating for ever), and the failure names the request that deleted each, from the audit log.
func TestAnOperandBeingDeletedIsNotKeptAndItsDeleterIsNamed(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(widgetGVK, meta.RESTScopeNamespace)
	widget := func(name string, deleting bool) *unstructured.Unstructured {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(widgetGVK)
		w.SetNamespace("team-a")
		w.SetName(name)
		if deleting {
			w.SetFinalizers([]string{"example.com/records"})
			w.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		}
		return w
	}
	kept, terminating, gone := widget("kept", false), widget("terminating", true), widget("gone", false)
	c := fake.NewClientBuilder().WithRESTMapper(mapper).WithObjects(kept, terminating).Build()
	ops := &operands{c: c}
	objs := []*unstructured.Unstructured{kept, terminating, gone}

	deleted, err := ops.deleted(context.Background(), objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 2 || !strings.HasPrefix(deleted[0], "Widget team-a/gone (gone)") || !strings.HasPrefix(deleted[1], "Widget team-a/terminating (being deleted") {
		t.Fatalf("deleted %q, want the gone Widget and the one being deleted, not the kept one", deleted)
	}

	del := func(user, name string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"delete","user":{"username":"` + user +
			`"},"objectRef":{"resource":"widgets","namespace":"team-a","name":"` + name + `","apiGroup":"` + widgetGVK.Group +
			`","apiVersion":"v1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-12-04T10:00:00.000000Z"}`
	}
	p := auditingProvider{log: del("system:serviceaccount:olm:operand-cleanup", "terminating") + "\n"}
	got := deletedBy(context.Background(), p, c, objs)
	for _, want := range []string{
		"Widget team-a/terminating: the request that deleted it: delete by system:serviceaccount:olm:operand-cleanup",
		"Widget team-a/gone: no request deleted it in the audit log",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("deletedBy says %q, want it to say %q", got, want)
		}
	}
	if strings.Contains(got, "team-a/kept") {
		t.Errorf("deletedBy names the kept Widget: %q", got)
	}
	if got := deletedBy(context.Background(), fakeProvider{}, c, objs); got != "" {
		t.Errorf("a provider without an audit log: deletedBy %q, want nothing", got)
	}
}
