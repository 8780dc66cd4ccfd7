package localruntime_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
)

// probe is an operator that records what it was started with and whether its identity may list
// secrets (the test's ServiceAccount may not).
type probe struct {
	starts    atomic.Int32
	running   atomic.Int32
	lastArgs  atomic.Value
	lastEnv   atomic.Value
	secretErr atomic.Value
	userAgent atomic.Value
	writeErr  atomic.Value
}

func (p *probe) main(ctx context.Context, cfg *rest.Config, args []string, getenv func(string) string) error {
	p.starts.Add(1)
	p.running.Add(1)
	defer p.running.Add(-1)
	p.lastArgs.Store(strings.Join(args, " "))
	p.lastEnv.Store(getenv("TARGETS") + "|" + getenv("NS") + "|" + getenv("FROM_CM"))
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	p.secretErr.Store(errString(err))
	// A write, so the test sees which field manager the API server makes of the operator's user agent.
	// Retried: the RBAC authorizer may not know the test's RoleBinding yet.
	p.userAgent.Store(cfg.UserAgent)
	// Some data: the API server keeps no field manager for an object without fields it set.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: writtenByProbe}, Data: map[string]string{"by": "probe"}}
	err = intervals.Wait(ctx, intervals.Reachable, func() (bool, string) {
		_, err := cs.CoreV1().ConfigMaps(getenv("NS")).Create(ctx, cm, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return true, ""
		}
		return false, err.Error()
	}, intervals.Every(50*time.Millisecond))
	p.writeErr.Store(errString(err))
	<-ctx.Done()
	return nil
}

// writtenByProbe is the ConfigMap the probe operator creates in its namespace.
const writtenByProbe = "written-by-probe"

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// The runtime's tests share one control plane (a start costs ≈ 3 s of CPU with its etcd and
// kube-controller-manager, and make test is CPU-bound): they touch disjoint namespaces, rt for the
// in-process operators, child-a, child-b and crash for the binary run as a child process.
func TestRuntime(t *testing.T) {
	t.Setenv("CLEANUP_E2E_LEAK_CHECK", "the test process's env")                                  // must not reach a child operator
	ctx, cancel := context.WithTimeout(context.Background(), intervals.Get(intervals.SuiteSetup)) // it starts a provider: a backstop above its start's own timeouts
	defer cancel()
	p, g := &probe{}, &gated{ready: make(chan struct{})}
	reg := localruntime.NewRegistry(map[string]localruntime.Entrypoint{"test.local/probe:v1": p.main, "test.local/probe:v2": p.main,
		"test.local/gated:v1": g.main}).RegisterBinary(childImage, localruntime.Binary{Package: "./testdata/childoperator", Dir: "."})
	prov, c := envtest.ForTest(ctx, t, envtest.WithName("runtime"), envtest.WithoutOLM(), envtest.WithRegistry(reg))
	t.Run("runs, stops and rolls deployments", func(t *testing.T) { testRunsStopsAndRollsDeployments(ctx, t, prov, c, p, g) })
	t.Run("runs a binary unchanged as a child process", func(t *testing.T) { testRunsUnchangedAsAChildProcess(ctx, t, prov, c) })
	t.Run("a child's failures name the cause", func(t *testing.T) { testFailuresNameTheCause(ctx, t, prov, c) })
}

// In-process operators run as their Deployments say: env, args, identity, image rolls, scale to zero,
// unregistered images, deletion, a missing ConfigMap, a readiness probe.
func testRunsStopsAndRollsDeployments(ctx context.Context, t *testing.T, prov *envtest.Provider, c client.Client, p *probe, g *gated) {
	ns := "rt"
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(t, c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}}))
	grantConfigMapCreate(ctx, t, c, ns, "probe")
	must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "from-configmap"}}))
	dep := deployment(ns, "test.local/probe:v1")
	must(t, c.Create(ctx, dep))
	key := client.ObjectKeyFromObject(dep)

	waitFor(t, "the operator to run and the deployment to be available", func() bool {
		return p.running.Load() == 1 && available(ctx, c, key) == "True"
	})
	if got := p.lastArgs.Load(); got != "sub --flag=ns-rt --metrics-bind-address=0 --health-probe-bind-address=0" {
		t.Errorf("args = %q", got)
	}
	if got := p.lastEnv.Load(); got != "a,b|rt|from-configmap" {
		t.Errorf("env (targets|namespace|configmap) = %q", got)
	}
	waitFor(t, "the operator's secrets call", func() bool { return p.secretErr.Load() != nil })
	if got := p.secretErr.Load().(string); !strings.Contains(got, "forbidden") || !strings.Contains(got, "system:serviceaccount:rt:probe") {
		t.Errorf("the operator must act as its ServiceAccount, which may not list secrets; got %q", got)
	}

	// Its clients name its Deployment and image, so what it writes is attributed to it (field
	// manager, the leftovers report's "who"), not to the test binary every in-process operator shares.
	const wantAgent = "probe:v1 (deployment probe in namespace rt)"
	waitFor(t, "the operator's ConfigMap write", func() bool { return p.writeErr.Load() != nil })
	if got := p.writeErr.Load().(string); got != "<nil>" {
		t.Fatalf("the operator could not write its ConfigMap: %s", got)
	}
	if got := p.userAgent.Load(); got != wantAgent {
		t.Errorf("the operator's user agent = %q, want %q", got, wantAgent)
	}
	written := &corev1.ConfigMap{}
	must(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: writtenByProbe}, written))
	if mf := written.ManagedFields; len(mf) == 0 || mf[0].Manager != wantAgent {
		t.Errorf("field managers of the operator's ConfigMap = %+v, want %q first", mf, wantAgent)
	}

	// Rolling to another image restarts the operator.
	patchImage(ctx, t, c, key, "test.local/probe:v2")
	waitFor(t, "a restart on the new image", func() bool { return p.starts.Load() == 2 && p.running.Load() == 1 })

	// Scaling to zero stops it.
	must(t, c.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))))
	waitFor(t, "the operator to stop on scale to zero", func() bool { return p.running.Load() == 0 })

	// An unregistered image stays unavailable and says why.
	patchImage(ctx, t, c, key, "test.local/unknown:v1")
	must(t, c.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dep.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))))
	waitFor(t, "an ImageNotRegistered condition", func() bool { return strings.HasPrefix(available(ctx, c, key), "False/ImageNotRegistered") })
	if p.running.Load() != 0 {
		t.Error("nothing may run for an unregistered image")
	}

	// Deleting the deployment stops the operator.
	patchImage(ctx, t, c, key, "test.local/probe:v1")
	waitFor(t, "the operator to run again", func() bool { return p.running.Load() == 1 })
	must(t, c.Delete(ctx, dep))
	waitFor(t, "the operator to stop on delete", func() bool { return p.running.Load() == 0 })
	for _, k := range prov.Runtime().Running() {
		if k.Namespace == ns { // the child-process tests' operators run in their own namespaces
			t.Errorf("runtime still reports %v running", k)
		}
	}

	// A Deployment whose ConfigMap is created only after it waits, then starts once the ConfigMap is
	// there (the kubelet retries such a pod; nothing else reconciles the Deployment again).
	late := deployment(ns, "test.local/probe:v1")
	late.Name = "late"
	late.Spec.Template.Spec.Containers[0].Env[2].ValueFrom.ConfigMapKeyRef.Name = "late-cfg"
	must(t, c.Create(ctx, late))
	waitFor(t, "a CreateContainerConfigError for the missing ConfigMap", func() bool {
		return strings.HasPrefix(available(ctx, c, client.ObjectKeyFromObject(late)), "False/CreateContainerConfigError")
	})
	must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late-cfg"}, Data: map[string]string{"k": "late"}}))
	waitFor(t, "the deployment to start once its ConfigMap exists", func() bool {
		return available(ctx, c, client.ObjectKeyFromObject(late)) == "True" && p.lastEnv.Load() == "a,b|rt|late"
	})

	// With a readiness probe, the Deployment is Available only once the operator answers it (as the
	// kubelet decides), not as soon as it started.
	gatedDep := deployment(ns, "test.local/gated:v1")
	gatedDep.Name = "gated"
	gatedDep.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("probes")}}}
	must(t, c.Create(ctx, gatedDep))
	gatedKey := client.ObjectKeyFromObject(gatedDep)
	waitFor(t, "the gated operator to run, not ready yet", func() bool {
		return g.serving.Load() && strings.HasPrefix(available(ctx, c, gatedKey), "False/MinimumReplicasUnavailable")
	})
	close(g.ready)
	waitFor(t, "Available once the readiness probe succeeds", func() bool { return available(ctx, c, gatedKey) == "True" })
}

// gated is an operator whose health server (on the address the runtime gives it) answers its
// readiness probe only once ready is closed.
type gated struct {
	ready   chan struct{}
	serving atomic.Bool
}

func (g *gated) main(ctx context.Context, _ *rest.Config, args []string, _ func(string) string) error {
	var addr string
	for _, a := range args { // the last one wins, as for a FlagSet
		if v, ok := strings.CutPrefix(a, "--health-probe-bind-address="); ok {
			addr = v
		}
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-g.ready:
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	g.serving.Store(true)
	_ = srv.Serve(l)
	return nil
}

func deployment(ns, image string) *appsv1.Deployment {
	labels := map[string]string{"app": "probe"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"olm.targetNamespaces": "a,b"}},
				Spec: corev1.PodSpec{ServiceAccountName: "probe", Containers: []corev1.Container{{
					Name: "op", Image: image, Command: []string{"/bin/probe", "sub"}, Args: []string{"--flag=ns-$(NS)"},
					Env: []corev1.EnvVar{
						{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
						{Name: "TARGETS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['olm.targetNamespaces']"}}},
						{Name: "FROM_CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "k"}}},
					},
				}}},
			},
		},
	}
}

// grantConfigMapCreate lets the ServiceAccount create ConfigMaps in ns (and nothing else).
func grantConfigMapCreate(ctx context.Context, t *testing.T, c client.Client, ns, sa string) {
	t.Helper()
	must(t, c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}}}))
	must(t, c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}}))
}

func patchImage(ctx context.Context, t *testing.T, c client.Client, key types.NamespacedName, image string) {
	t.Helper()
	// The runtime writes the status concurrently: retry on conflicts as any client would.
	must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, key, dep); err != nil {
			return err
		}
		dep.Spec.Template.Spec.Containers[0].Image = image
		return c.Update(ctx, dep)
	}))
}

// available renders the Available condition as "Status/Reason".
func available(ctx context.Context, c client.Client, key types.NamespacedName) string {
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, key, dep); err != nil {
		return err.Error()
	}
	if dep.Status.ObservedGeneration < dep.Generation {
		return "stale"
	}
	for _, cond := range dep.Status.Conditions {
		if cond.Type == appsv1.DeploymentAvailable {
			if cond.Status == corev1.ConditionTrue {
				return "True"
			}
			return string(cond.Status) + "/" + cond.Reason
		}
	}
	return "none"
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := intervals.Wait(context.Background(), intervals.DeploymentAvailable, func() (bool, string) { return cond(), "not yet" },
		intervals.Every(50*time.Millisecond))
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
