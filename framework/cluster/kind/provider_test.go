package kind

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	"sigs.k8s.io/yaml"

	"github.com/cleanup-e2e/cleanup-e2e/framework/auditlog"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

func TestKubeletPatchParses(t *testing.T) {
	p := &Provider{opts: defaults(), workDir: t.TempDir()}
	p.opts.nodeImage = "example.local/node:v1"
	cfg, err := p.clusterConfig()
	if err != nil {
		t.Fatal(err)
	}
	if policy, err := os.ReadFile(filepath.Join(cfg.Nodes[0].ExtraMounts[0].HostPath, "policy.yaml")); err != nil || string(policy) != auditlog.WritesPolicy {
		t.Errorf("the audit policy the node mounts: %q (%v), want auditlog.WritesPolicy", policy, err)
	}
	if !cfg.Networking.DisableDefaultCNI || len(cfg.Nodes) != 1 || cfg.Nodes[0].Image != "example.local/node:v1" {
		t.Fatalf("unexpected config: %+v", cfg)
	}
	if len(cfg.KubeadmConfigPatches) == 0 {
		t.Fatal("the kubelet patches are missing")
	}
	// Strictly decoded into the kubelet's own type: a misspelt field would be silently ignored by kubeadm.
	var kc kubeletconfigv1beta1.KubeletConfiguration
	if err := yaml.UnmarshalStrict([]byte(kubeletPatches[0]), &kc); err != nil {
		t.Fatalf("kubelet patch does not decode as a KubeletConfiguration: %v", err)
	}
	if kc.FailCgroupV1 == nil || *kc.FailCgroupV1 {
		t.Error("failCgroupV1 must be false (cgroup v1 hosts)")
	}
	if kc.ImageGCHighThresholdPercent == nil || *kc.ImageGCHighThresholdPercent != 100 ||
		kc.ImageGCLowThresholdPercent == nil || *kc.ImageGCLowThresholdPercent >= 100 {
		t.Errorf("image GC must be off (high 100, low below it): %v/%v", kc.ImageGCHighThresholdPercent, kc.ImageGCLowThresholdPercent)
	}
	for _, signal := range []string{"nodefs.available", "imagefs.available", "memory.available"} {
		if kc.EvictionHard[signal] == "" {
			t.Errorf("evictionHard lacks %s (a partial map zeroes the signals it leaves out)", signal)
		}
	}
}

func TestInvalidNameIsRefusedBeforeDocker(t *testing.T) {
	_, err := New(context.Background(), WithName("Bad_Name"), WithNodeImage("example.local/node:v1"))
	if err == nil || !strings.Contains(err.Error(), `"Bad_Name"`) || !strings.Contains(err.Error(), "KIND_CLUSTER_NAME") {
		t.Fatalf("want an error naming the bad name and where it came from, got %v", err)
	}
}

func TestNeedFree(t *testing.T) {
	dir := t.TempDir()
	if err := needFree(dir, 1, "a test"); err != nil {
		t.Fatalf("1 byte must be free: %v", err)
	}
	err := needFree(dir, 1<<60, "a test")
	if err == nil {
		t.Fatal("an exabyte cannot be free")
	}
	for _, want := range []string{dir, "a test", "GiB free", "need 1073741824.0 GiB", "scripts/kind/prune.sh", "nothing was created"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestCluster exercises the whole provider against Docker (about 2-3 minutes): create, run a pod from
// a locally loaded FROM-scratch image, keep and reuse a healthy cluster, recreate a broken one, delete.
// Needs scripts/kind/docker.sh and scripts/kind/node-image.sh first.
func TestCluster(t *testing.T) {
	if os.Getenv("CLEANUP_E2E_KIND") != "1" {
		t.Skip("set CLEANUP_E2E_KIND=1 to run the kind provider against Docker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	name := "cleanup-e2e-test"
	base := []Option{WithName(name), WithLogger(testr.New(t)), WithWorkRoot(t.TempDir())}
	opts := func(more ...Option) []Option { return append(append([]Option{}, base...), more...) }

	// 1. create with an image loaded while the cluster becomes usable, keep on Stop
	img := smokeImage(ctx, t)
	p, err := New(ctx, opts(WithoutReuse(), WithKeepCluster(true), WithImages(img))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kindcluster.NewProvider().Delete(name, "") })
	nodes, err := p.kind.ListNodes(name)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes of %s: %v %v", name, nodes, err)
	}
	if id, err := nodeutils.ImageID(nodes[0], img); err != nil || id == "" {
		t.Fatalf("New(WithImages(%s)) returned before the image was on the node: %v", img, err)
	}
	runPod(ctx, t, p, img)
	controlPlaneRunsWithGOGC(ctx, t, p)
	auditLogNamesTheWriter(ctx, t, p)
	if err := p.CollectArtifacts(ctx, filepath.Join(t.TempDir(), "artifacts")); err != nil {
		t.Errorf("CollectArtifacts: %v", err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// 2. a healthy kept cluster is reused
	start := time.Now()
	p, err = New(ctx, opts(WithKeepCluster(true))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reused in %s", time.Since(start))
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// 3. a broken one is recreated, and deleted by Stop
	if out, err := exec.CommandContext(ctx, "docker", "stop", name+"-control-plane").CombinedOutput(); err != nil {
		t.Fatalf("docker stop: %v: %s", err, out)
	}
	p, err = New(ctx, opts(WithKeepCluster(false))...)
	if err != nil {
		t.Fatal(err)
	}
	runPod(ctx, t, p, img)
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	names, err := kindcluster.NewProvider().List()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == name {
			t.Fatalf("cluster %s still exists after Stop", name)
		}
	}
}

// controlPlaneRunsWithGOGC checks that kubeadm applied controlPlanePatches: the static pods of the
// API server, etcd and the controller manager set GOGC=400.
func controlPlaneRunsWithGOGC(ctx context.Context, t *testing.T, p *Provider) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(p.RESTConfig())
	for _, component := range []string{"kube-apiserver", "etcd", "kube-controller-manager"} {
		pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=" + component})
		if err != nil || len(pods.Items) != 1 {
			t.Errorf("the static pod of %s: %v (%d found)", component, err, len(pods.Items))
			continue
		}
		env := pods.Items[0].Spec.Containers[0].Env
		if !slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == "GOGC" && e.Value == "400" }) {
			t.Errorf("%s runs without GOGC=400 (controlPlanePatches not applied by kubeadm): env %v", component, env)
		}
	}
}

// auditLogNamesTheWriter checks that kubeadm applied auditPatches: the API server's audit log, read
// from the node, names who last wrote an object, here an impersonated user's patch.
func auditLogNamesTheWriter(ctx context.Context, t *testing.T, p *Provider) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(p.RESTConfig())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "audited"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jane := rest.CopyConfig(p.RESTConfig())
	jane.Impersonate = rest.ImpersonationConfig{UserName: "jane", Groups: []string{"system:masters"}}
	if _, err := kubernetes.NewForConfigOrDie(jane).CoreV1().ConfigMaps("default").Patch(ctx, "audited", types.MergePatchType,
		[]byte(`{"data":{"by":"jane"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	log, err := p.AuditLog()
	if err != nil {
		t.Fatal(err)
	}
	if w, ok := auditlog.LastWrite(log, auditlog.Object{Resource: "configmaps", Namespace: "default", Name: "audited"}); !ok || w.User != "jane" || w.Verb != "patch" {
		t.Errorf("the node's audit log names %+v (found: %t) as the last writer of ConfigMap default/audited, want jane's patch (%d bytes of log)", w, ok, len(log))
	}
}

// smokeImage is the pause image under a test tag: FROM scratch, in the host's Docker after node-image.sh.
func smokeImage(ctx context.Context, t *testing.T) string {
	t.Helper()
	img := "cleanup-e2e.local/kind-smoke:v0.0.1"
	if out, err := exec.CommandContext(ctx, "docker", "tag", "registry.k8s.io/pause:3.10.2", img).CombinedOutput(); err != nil {
		t.Fatalf("docker tag: %v: %s", err, out)
	}
	return img
}

// runPod loads img (smokeImage) and runs it with imagePullPolicy Never.
func runPod(ctx context.Context, t *testing.T, p *Provider, img string) {
	t.Helper()
	if err := p.LoadImages(ctx, img); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(p.RESTConfig())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "smoke", Image: img, ImagePullPolicy: corev1.PullNever}},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
		},
	}
	_ = cs.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	_ = intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		_, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		return err != nil, "pod smoke of an earlier run still there"
	})
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := intervals.Wait(ctx, intervals.DeploymentAvailable, func() (bool, string) {
		got, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.Phase == corev1.PodRunning, fmt.Sprintf("pod status %+v", got.Status)
	}, intervals.Every(time.Second))
	if err != nil {
		t.Fatalf("pod never ran: %v", err)
	}
}
