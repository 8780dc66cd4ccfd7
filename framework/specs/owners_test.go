package specs

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestOwnerStateTellsAnOLMv0CRDFromAnOrphan(t *testing.T) {
	now := metav1.Now()
	for _, c := range []struct {
		name      string
		meta      metav1.ObjectMeta
		want, not string
	}{
		{"orphan", metav1.ObjectMeta{Name: "widgets.example.com"},
			"ownerReferences: none; not being deleted (orphaned: the garbage collector will never delete it)", "OLM v0"},
		{"OLM v0's", metav1.ObjectMeta{Name: "widgets.example.com", Labels: map[string]string{"app": "w", "operators.coreos.com/widget-operator.operators": ""}},
			"never owned: an OLM v0 install's, label operators.coreos.com/widget-operator.operators;", "orphaned"},
		{"owned", metav1.ObjectMeta{Name: "widgets.example.com", Labels: map[string]string{"operators.coreos.com/widget-operator.operators": ""},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ClusterExtension", Name: "widget", UID: "u1", BlockOwnerDeletion: ptr.To(true)}}},
			"ownerReferences: ClusterExtension widget (uid u1, controller false, blockOwnerDeletion true); not being deleted", "never"},
		{"being deleted", metav1.ObjectMeta{Name: "widgets.example.com", DeletionTimestamp: &now},
			"ownerReferences: none; deletionTimestamp ", "never"},
	} {
		got := ownerState(&c.meta)
		if !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
			t.Errorf("%s: ownerState = %q, want it to hold %q and not %q", c.name, got, c.want, c.not)
		}
	}
}
