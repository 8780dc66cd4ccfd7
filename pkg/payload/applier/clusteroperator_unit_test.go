package applier

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// Issue 13 item 5: a pre-created ClusterOperator carries the manifest's relatedObjects (as the CVO
// fills them), so must-gather finds them before its operator starts.
func TestPrecreatedClusterOperatorGetsRelatedObjects(t *testing.T) {
	c := pt.FakeClient()
	a := New(c, nil, Options{Namespace: "applier", DisableStatus: true, ClusterOperatorTimeout: 200 * time.Millisecond, PollInterval: 50 * time.Millisecond})
	co := pt.ClusterOperator("foo", "operator", "1.0.0")
	related := []interface{}{map[string]interface{}{"group": "", "resource": "namespaces", "name": "foo"}}
	if err := unstructured.SetNestedSlice(co.Object, related, "status", "relatedObjects"); err != nil {
		t.Fatal(err)
	}
	unitPass(t, a, pt.New("1.0.0").File("0000_10_foo_00_clusteroperator.yaml", co), ModeInstall)
	var live configv1.ClusterOperator
	if err := c.Get(context.Background(), client.ObjectKey{Name: "foo"}, &live); err != nil {
		t.Fatal(err)
	}
	want := configv1.ObjectReference{Group: "", Resource: "namespaces", Name: "foo"}
	if len(live.Status.RelatedObjects) != 1 || live.Status.RelatedObjects[0] != want {
		t.Fatalf("relatedObjects %+v, want [%+v]", live.Status.RelatedObjects, want)
	}
	if len(live.Status.Versions) != 0 {
		t.Fatalf("versions are the operator's to report, got %+v", live.Status.Versions)
	}
}
