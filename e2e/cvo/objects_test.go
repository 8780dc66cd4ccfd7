package cvo

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// Manifest objects for the payloads of this suite (payloadtest has namespaces, ConfigMaps, CRDs and
// ClusterOperators; these add what an operator's manifests hold).

const rbacAPI = "rbac.authorization.k8s.io/v1"

type obj = *unstructured.Unstructured

func withField(o obj, value interface{}, fields ...string) obj {
	if err := unstructured.SetNestedField(o.Object, value, fields...); err != nil {
		panic(err)
	}
	return o
}

func serviceAccount(ns, name string) obj { return pt.Object("v1", "ServiceAccount", ns, name) }

func service(ns, name string) obj {
	return withField(pt.Object("v1", "Service", ns, name), map[string]interface{}{
		"selector": map[string]interface{}{"app": name},
		"ports":    []interface{}{map[string]interface{}{"name": "https", "port": int64(443), "targetPort": int64(8443)}},
	}, "spec")
}

// rules grants every verb on the resources of each "group/resource" entry.
func rules(groupResources ...[2]string) []interface{} {
	var out []interface{}
	for _, gr := range groupResources {
		out = append(out, map[string]interface{}{
			"apiGroups": []interface{}{gr[0]}, "resources": []interface{}{gr[1]}, "verbs": []interface{}{"*"},
		})
	}
	return out
}

func clusterRole(name string, r []interface{}) obj {
	return withField(pt.Object(rbacAPI, "ClusterRole", "", name), r, "rules")
}

func role(ns, name string, r []interface{}) obj {
	return withField(pt.Object(rbacAPI, "Role", ns, name), r, "rules")
}

func binding(kind, ns, name, roleKind, roleName, saNamespace, sa string) obj {
	o := pt.Object(rbacAPI, kind, ns, name)
	o.Object["roleRef"] = map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": roleKind, "name": roleName}
	o.Object["subjects"] = []interface{}{map[string]interface{}{"kind": "ServiceAccount", "name": sa, "namespace": saNamespace}}
	return o
}

func clusterRoleBinding(name, clusterRole, saNamespace, sa string) obj {
	return binding("ClusterRoleBinding", "", name, "ClusterRole", clusterRole, saNamespace, sa)
}

func roleBinding(ns, name, role, sa string) obj {
	return binding("RoleBinding", ns, name, "Role", role, ns, sa)
}

// deployment runs one container of image as sa; env is name/value pairs.
func deployment(ns, name, sa, image string, command, args []string, env ...string) obj {
	var envs []interface{}
	for i := 0; i+1 < len(env); i += 2 {
		envs = append(envs, map[string]interface{}{"name": env[i], "value": env[i+1]})
	}
	labels := map[string]interface{}{"app": name}
	ctr := map[string]interface{}{"name": "manager", "image": image, "imagePullPolicy": "IfNotPresent"}
	if len(command) > 0 {
		ctr["command"] = anySlice(command)
	}
	if len(args) > 0 {
		ctr["args"] = anySlice(args)
	}
	if len(envs) > 0 {
		ctr["env"] = envs
	}
	return withField(pt.Object("apps/v1", "Deployment", ns, name), map[string]interface{}{
		"replicas": int64(1),
		"selector": map[string]interface{}{"matchLabels": labels},
		"template": map[string]interface{}{
			"metadata": map[string]interface{}{"labels": labels},
			"spec": map[string]interface{}{
				"serviceAccountName": sa,
				"containers":         []interface{}{ctr},
			},
		},
	}, "spec")
}

func anySlice(s []string) []interface{} {
	out := make([]interface{}, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
