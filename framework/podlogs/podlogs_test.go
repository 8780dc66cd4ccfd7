package podlogs_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/cleanup-e2e/cleanup-e2e/framework/podlogs"
)

// Each start of a container is followed once, into its pod's file, and a restart again; a container
// not started yet is not; what a deleted pod wrote stays readable. (The fake clientset's GetLogs
// answers "fake logs" to every request.)
func TestFollowKeepsEveryContainerStartAfterThePodIsGone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cs := fake.NewClientset()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "op-1"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "manager", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "sidecar", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
		}}}
	_, err := cs.CoreV1().Pods("op").Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	f, err := podlogs.Follow(ctx, cs, "op", dir)
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Stop()
	manager := filepath.Join(dir, "op-1_manager.log")
	read := func() string { b, _ := os.ReadFile(manager); return string(b) }
	g.Eventually(read).Should(Equal("fake logs"), func() string { return f.Text(0) })

	pod.Status.ContainerStatuses[0].RestartCount = 1
	_, err = cs.CoreV1().Pods("op").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(read).Should(Equal("fake logsfake logs"), "a restarted container is followed again, appended")

	g.Expect(cs.CoreV1().Pods("op").Delete(ctx, "op-1", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() string { return f.Text(time.Second) }).Should(Equal("fake logsfake logs\n"))
	g.Expect(filepath.Join(dir, "op-1_sidecar.log")).NotTo(BeAnExistingFile(), "a container that never started has no log")
	if got := strings.Count(read(), "fake logs"); got != 2 {
		t.Errorf("%d streams of op-1/manager, want 2 (one per start)", got)
	}
}
