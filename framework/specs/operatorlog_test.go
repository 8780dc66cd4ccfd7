package specs

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// stubT is a T whose failure the test sets, and whose cleanups it runs.
type stubT struct {
	testing.TB
	failed   bool
	cleanups []func(context.Context)
}

func (s *stubT) Gomega() gomega.Gomega                { return gomega.NewWithT(s.TB) }
func (s *stubT) Cleanup(fn func(ctx context.Context)) { s.cleanups = append(s.cleanups, fn) }
func (s *stubT) Step(string)                          {}
func (s *stubT) Failed() bool                         { return s.failed }
func (s *stubT) end() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i](context.Background())
	}
}

// The pods' logs are read while the spec runs, land among the artifacts only when it failed, and
// leave no temporary directory behind either way. (The fake clientset answers "fake logs".)
func TestFollowedPodLogsStayOnlyForAFailedSpec(t *testing.T) {
	for _, failed := range []bool{false, true} {
		g := gomega.NewWithT(t)
		t.Setenv("ARTIFACTS", t.TempDir())
		cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "op-1"},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
				{Name: "manager", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}})
		st := &stubT{TB: t}
		before, _ := filepath.Glob(filepath.Join(os.TempDir(), "operator-logs-*"))
		log, err := followPods(context.Background(), st, cs, "op")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Eventually(func() string { s, _ := log(); return s }).Should(gomega.Equal("fake logs\n"))
		all, _ := filepath.Glob(filepath.Join(os.TempDir(), "operator-logs-*"))
		var tmp []string // this follower's
		for _, d := range all {
			if !slices.Contains(before, d) {
				tmp = append(tmp, d)
			}
		}
		g.Expect(tmp).To(gomega.HaveLen(1))
		st.failed = failed
		st.end()
		kept := filepath.Join(os.Getenv("ARTIFACTS"), "operator-logs", "op", "op-1_manager.log")
		if failed {
			g.Expect(kept).To(gomega.BeAnExistingFile(), "a failed spec leaves the pods' logs")
		} else {
			g.Expect(filepath.Join(os.Getenv("ARTIFACTS"), "operator-logs")).NotTo(gomega.BeAnExistingFile(), "a passed spec leaves none")
		}
		for _, d := range tmp {
			g.Expect(d).NotTo(gomega.BeADirectory(), "the temporary directory is removed")
		}
	}
}
