package localruntime_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
)

const childImage = "test.local/childoperator:v1"

// A scaffold-style main runs unchanged as a child process: in-cluster config from the projected
// ServiceAccount token, leader election finding its namespace in the mounted file, its volumes where
// it mounts them, only the container's env, and two copies both asking for :8081 at once.
func testRunsUnchangedAsAChildProcess(ctx context.Context, t *testing.T, prov *envtest.Provider, c client.Client) {

	for _, ns := range []string{"child-a", "child-b"} {
		childNamespace(ctx, t, c, ns)
		dep := childDeployment(ns, "--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=:8443")
		must(t, c.Create(ctx, dep))
	}
	for _, ns := range []string{"child-a", "child-b"} {
		key := types.NamespacedName{Namespace: ns, Name: "child"}
		waitFor(t, "deployment "+key.String()+" to be available (its readiness probe answering)", func() bool {
			return available(ctx, c, key) == "True"
		})
		seen := &corev1.ConfigMap{}
		waitFor(t, "the operator in "+ns+" to report what it sees", func() bool {
			return c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "seen-by-child"}, seen) == nil
		})
		want := map[string]string{
			"user":     "system:serviceaccount:" + ns + ":child", // its own token, not impersonation
			"greeting": "hello from a configmap volume",
			"secret":   "from a secret, by subPath",
			"fromEnv":  "from the pod template",
			"leaked":   "",
			"hostname": "child-local",
		}
		for k, v := range want {
			if seen.Data[k] != v {
				t.Errorf("%s: the operator saw %s = %q, want %q", ns, k, seen.Data[k], v)
			}
		}
		if args := seen.Data["args"]; strings.Contains(args, ":8081") || strings.Contains(args, ":8443") ||
			!strings.Contains(args, "--health-probe-bind-address=127.0.0.1:") || !strings.Contains(args, "--leader-elect") {
			t.Errorf("%s: bind addresses must move to free loopback ports, other args stay; args were %q", ns, args)
		}
	}

	// Deleted: the process stops (no operator left running, no process of the binary).
	must(t, c.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "child-a", Name: "child"}}))
	waitFor(t, "the operator of the deleted deployment to stop", func() bool {
		for _, k := range prov.Runtime().Running() {
			if k.Namespace == "child-a" {
				return false
			}
		}
		return true
	})
}

// A binary that exits is restarted with back-off, and the Deployment's condition quotes what it said;
// a volume the runtime cannot give fails naming the volume and what to do.
func testFailuresNameTheCause(ctx context.Context, t *testing.T, prov *envtest.Provider, c client.Client) {
	childNamespace(ctx, t, c, "crash")
	must(t, c.Create(ctx, childDeployment("crash", "--fail-with=open /tmp/k8s-webhook-server/serving-certs/tls.crt: no such file or directory")))
	hostPath := childDeployment("crash", "--leader-elect")
	hostPath.Name = "hostpath"
	hostPath.Spec.Template.Spec.Volumes = append(hostPath.Spec.Template.Spec.Volumes, corev1.Volume{Name: "host",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib"}}})
	ctr := &hostPath.Spec.Template.Spec.Containers[0]
	ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "host", MountPath: "/host"})
	must(t, c.Create(ctx, hostPath))

	for name, want := range map[string][]string{
		// The binary logs its error as a scaffold does, a stack trace after it: the condition quotes the
		// error line, and names where the whole log is kept, not a path deleted when the run ends.
		"child": {"CrashLoopBackOff", "serving-certs/tls.crt: no such file or directory", "exit status 1",
			"the last error it logged: ERROR setup unable to start manager", "its whole log: operators/crash_child.log"},
		"hostpath": {"CrashLoopBackOff", `volume "host"`, "CLEANUP_E2E_PROVIDER=kind"},
	} {
		var msg string
		waitFor(t, "deployment "+name+" to report why it does not run", func() bool {
			msg = availableMessage(ctx, c, types.NamespacedName{Namespace: "crash", Name: name})
			return strings.Contains(msg, want[1])
		})
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("deployment %s: the Available condition %q should name %q", name, msg, w)
			}
		}
		if strings.Contains(msg, ".go:") || strings.Contains(msg, prov.WorkDir()) {
			t.Errorf("deployment %s: the Available condition %q quotes a stack frame or a path the run deletes", name, msg)
		}
	}
}

// childNamespace makes ns with the operator's ServiceAccount, its RBAC (ConfigMaps, leases for leader
// election) and what its volumes and env refer to.
func childNamespace(ctx context.Context, t *testing.T, c client.Client, ns string) {
	t.Helper()
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(t, c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}}))
	must(t, c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "events"}, Verbs: []string{"*"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"*"}},
	}}))
	must(t, c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "child"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "child"}}}))
	must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child-config"},
		Data: map[string]string{"greeting": "hello from a configmap volume"}}))
	must(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child-secret"},
		StringData: map[string]string{"token": "from a secret, by subPath"}}))
}

// childDeployment is laid out as kubebuilder's config/manager: /manager with flags, probes on :8081.
func childDeployment(ns string, args ...string) *appsv1.Deployment {
	labels := map[string]string{"control-plane": "controller-manager"}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8081)}}}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "child"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "child",
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "child-config"}}}},
						{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "child-secret"}}},
					},
					Containers: []corev1.Container{{
						Name: "manager", Image: childImage, Command: []string{"/manager"}, Args: args,
						Env:            []corev1.EnvVar{{Name: "FROM_ENV", Value: "from the pod template"}},
						ReadinessProbe: probe,
						VolumeMounts: []corev1.VolumeMount{
							{Name: "config", MountPath: "/tmp/childoperator/config", ReadOnly: true},
							{Name: "secret", MountPath: "/tmp/childoperator/token-file", SubPath: "token", ReadOnly: true},
						},
					}},
				},
			},
		},
	}
}

// availableMessage is the Available condition as "Reason: message".
func availableMessage(ctx context.Context, c client.Client, key types.NamespacedName) string {
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, key, dep); err != nil {
		return err.Error()
	}
	for _, cond := range dep.Status.Conditions {
		if cond.Type == appsv1.DeploymentAvailable {
			return cond.Reason + ": " + cond.Message
		}
	}
	return ""
}
