package operandcleanupconfig

import (
	"testing"
)

func TestObjects(t *testing.T) {
	objs, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetName() == "" {
			t.Errorf("%s without a name", o.GetKind())
		}
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment"} {
		if kinds[k] != 1 {
			t.Errorf("want one %s, got %d", k, kinds[k])
		}
	}
	if objs[0].GetKind() != "Namespace" {
		t.Errorf("Namespace must come first, got %s", objs[0].GetKind())
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		cs, _, _ := unstructuredContainers(o.Object)
		if len(cs) != 1 || cs[0]["image"] != Image {
			t.Errorf("deployment image: %v", cs)
		}
	}
}

func unstructuredContainers(obj map[string]interface{}) ([]map[string]interface{}, bool, error) {
	spec, _ := obj["spec"].(map[string]interface{})
	tmpl, _ := spec["template"].(map[string]interface{})
	pspec, _ := tmpl["spec"].(map[string]interface{})
	raw, _ := pspec["containers"].([]interface{})
	var out []map[string]interface{}
	for _, c := range raw {
		if m, ok := c.(map[string]interface{}); ok {
			out = append(out, m)
		}
	}
	return out, true, nil
}
