package artifacts

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// Every container's log is kept, and a restarted one's previous run (a crash loop's cause) too
// (client-go's fake serves "fake logs" for each).
func TestPodLogsKeepThePreviousRunOfARestartedContainer(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "manager-7d9f"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", RestartCount: 4}, {Name: "proxy"}}}}
	dir := t.TempDir()
	if err := PodLogs(context.Background(), kubefake.NewClientset(pod), "op", dir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := []string{"manager-7d9f_manager.log", "manager-7d9f_manager.previous.log", "manager-7d9f_proxy.log"}
	if !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, want[1])); string(data) != "fake logs" {
		t.Errorf("%s holds %q", want[1], data)
	}
	// No pods (envtest): nothing written, no error.
	empty := filepath.Join(t.TempDir(), "logs")
	if err := PodLogs(context.Background(), kubefake.NewClientset(), "op", empty); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Errorf("a namespace without pods made %s", empty)
	}
}
