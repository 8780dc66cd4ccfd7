package deletions

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// A removal names the object's last write before it: every manager of the newest managedFields entry
// (entries share a second), with its operation and subresource; not an older one.
func TestARemovalNamesTheLastWriters(t *testing.T) {
	g := NewWithT(t)
	gvr := schema.GroupVersionResource{Group: "g.example", Version: "v1", Resource: "widgets"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "WidgetList"})
	rec, err := start(context.Background(), dyn, gvr)
	g.Expect(err).NotTo(HaveOccurred())
	defer rec.Stop()
	at := func(s int) *metav1.Time { return &metav1.Time{Time: time.Date(2026, 1, 1, 10, 0, s, 0, time.UTC)} }
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("g.example/v1")
	w.SetKind("Widget")
	w.SetNamespace("team-a")
	w.SetName("w1")
	w.SetUID("uid-1")
	w.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(0)},
		{Manager: "widget-operator", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(5)},
		{Manager: "widget-operator", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: at(5)},
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(3)},
	})
	res := dyn.Resource(gvr).Namespace("team-a")
	_, err = res.Create(context.Background(), w, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Barrier(context.Background(), "team-a", "w1", 0)).To(Succeed())
	g.Expect(res.Delete(context.Background(), "w1", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() string { d, _ := rec.Of("uid-1"); return d.LastWrite }).
		Should(Equal("widget-operator (Update at 10:00:05), widget-operator (Update of status at 10:00:05)"))
	_, ok := rec.Of("uid-2")
	g.Expect(ok).To(BeFalse())
}
