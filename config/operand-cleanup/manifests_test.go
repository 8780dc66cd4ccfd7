package operandcleanupconfig

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/operandcleanup"
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

// The controller keeps an operator's cluster RBAC alive with a finalizer on OLM's own objects: it must
// never be able to create, change or grant RBAC.
func TestClusterRoleHasNoRBACWritePower(t *testing.T) {
	objs, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, r := range rules {
			rule, _ := r.(map[string]interface{})
			groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
			verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
			if !slices.Contains(groups, "rbac.authorization.k8s.io") && !slices.Contains(groups, "*") {
				continue
			}
			if slices.Contains(groups, "*") && !slices.Contains(verbs, "*") {
				// The operand rule (list/watch/delete on everything): delete covers RBAC objects too, which
				// is documented there; it cannot create, update, escalate or bind.
				for _, v := range verbs {
					if v != "list" && v != "watch" && v != "delete" {
						t.Errorf("%s %s: wildcard rule with verb %q", o.GetKind(), o.GetName(), v)
					}
				}
				continue
			}
			for _, v := range verbs {
				if !slices.Contains([]string{"get", "list", "watch", "patch"}, v) {
					t.Errorf("%s %s: verb %q on RBAC (only get/list/watch/patch for finalizers)", o.GetKind(), o.GetName(), v)
				}
			}
		}
	}
}

// The guards of OLM v0's operand cleanup and OLM v1's ordered uninstall are what this directory installs: a ValidatingAdmissionPolicy
// and a binding of each name, the binding denying. The controller checks for the orphan guard
// (extensioncleanup.OrphanGuardName) before an orphan uninstall.
func TestGuardsAreInstalled(t *testing.T) {
	if OrphanGuard != extensioncleanup.OrphanGuardName {
		t.Fatalf("OrphanGuard %q, extensioncleanup.OrphanGuardName %q: the controller would look for another policy", OrphanGuard, extensioncleanup.OrphanGuardName)
	}
	for _, name := range []string{extensioncleanup.OrphanGuardName, extensioncleanup.UnarmedGuardName, operandcleanup.UnarmedGuardName} {
		objs, err := Named(name)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, o := range objs {
			found[o.GetKind()] = true
			if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
				actions, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "validationActions")
				if policy, _, _ := unstructured.NestedString(o.Object, "spec", "policyName"); policy != name || !slices.Contains(actions, "Deny") {
					t.Errorf("binding %s: policy %q, actions %v; want %s with Deny", name, policy, actions, name)
				}
			}
		}
		if !found["ValidatingAdmissionPolicy"] || !found["ValidatingAdmissionPolicyBinding"] {
			t.Errorf("config/operand-cleanup has %v named %s; want the policy and its binding", found, name)
		}
	}
}
