package olm

import (
	"context"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cleanup-e2e/cleanup-e2e/framework/crashlog"
)

// What a kubebuilder go/v4 operator whose bundle passes --metrics-cert-path without the volume
// writes before it exits: its error, then the stack trace its development-mode logger adds.
const scaffoldCrash = "2026-11-27T10:00:00Z\tINFO\tsetup\tInitializing metrics certificate watcher using provided certificates\n" +
	"2026-11-27T10:00:00Z\tERROR\tsetup\tto initialize metrics certificate watcher\t{\"error\": \"open /tmp/k8s-metrics-server/metrics-certs/tls.crt: no such file or directory\"}\n" +
	"main.main\n\t/workspace/cmd/main.go:185\nruntime.main\n\t/usr/local/go/src/runtime/proc.go:290\n"

const scaffoldCause = "ERROR setup to initialize metrics certificate watcher " +
	`{"error": "open /tmp/k8s-metrics-server/metrics-certs/tls.crt: no such file or directory"}`

func crashCSV() *operatorsv1alpha1.ClusterServiceVersion {
	csv := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "memcached-operator.v0.0.1"}}
	csv.Status.Phase = operatorsv1alpha1.CSVPhaseInstalling
	csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs = []operatorsv1alpha1.StrategyDeploymentSpec{{
		Name: "memcached-operator-controller-manager",
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"control-plane": "controller-manager"}}},
	}}
	return csv
}

func crashScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := operatorsv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// On envtest the local runtime counts the exits in the Deployment's Available condition.
func localRuntimeDeployment(exits int) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "memcached-operator-controller-manager"},
		Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable,
			Status: corev1.ConditionFalse, Reason: "CrashLoopBackOff",
			Message: crashlog.ExitedMessage(exits, "last error: exit status 1; "+crashlog.Describe(scaffoldCrash))}}}}
}

// On kind the kubelet restarts the container with back-off; its previous run's log holds the cause.
func crashingPod(restarts int32) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "memcached-operator-controller-manager-7d9f-x2x",
		Labels: map[string]string{"control-plane": "controller-manager"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "manager", RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: "back-off 40s restarting failed container=manager"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
		}}}}
}

// kindDeployment is the operator's Deployment as the deployment controller reports a crash loop.
func kindDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "memcached-operator-controller-manager"},
		Status: appsv1.DeploymentStatus{Replicas: 1, UnavailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable",
			Message: "Deployment does not have minimum availability."}}}}
}

// fakeLogs serves what a container logged, and records whether the previous run's log was asked for.
type fakeLogs struct {
	log      string
	asked    []string
	previous bool
}

func (f *fakeLogs) read(_ context.Context, ns, pod, container string, previous bool) (string, error) {
	f.asked = append(f.asked, ns+"/"+pod+"/"+container)
	f.previous = previous
	return f.log, nil
}

func TestCrashLoopingIsAVerdictFromTheThirdExit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		want    []string // "" entries: no verdict
		noWords []string
	}{
		{name: "envtest, 2 exits", objs: []client.Object{localRuntimeDeployment(2)}},
		{name: "envtest, 3 exits", objs: []client.Object{localRuntimeDeployment(3)},
			want: []string{"deployment op/memcached-operator-controller-manager", "operator exited 3 time(s)", scaffoldCause}},
		// Restarted once, waiting to start the second time: 2 exits.
		{name: "kind, 2 exits", objs: []client.Object{kindDeployment(), crashingPod(1)}},
		{name: "kind, 3 exits", objs: []client.Object{kindDeployment(), crashingPod(2)},
			want: []string{"container manager of pod memcached-operator-controller-manager-7d9f-x2x exited 3 times",
				"CrashLoopBackOff (back-off 40s", "last exit code 1 (Error)", "the last error it logged: " + scaffoldCause}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(crashScheme(t)).WithObjects(tc.objs...).Build()
			logs := &fakeLogs{log: scaffoldCrash}
			v := CrashLooping(ctx, c, logs.read, crashCSV())
			if len(tc.want) == 0 {
				if v != "" {
					t.Fatalf("a verdict before %d exits: %s", CrashLoopExits, v)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(v, w) {
					t.Errorf("the verdict lacks %q:\n%s", w, v)
				}
			}
			if strings.Contains(v, "proc.go") || strings.Contains(v, "main.go") {
				t.Errorf("the verdict quotes a stack frame:\n%s", v)
			}
			if strings.HasPrefix(tc.name, "kind") && (!logs.previous || len(logs.asked) != 1 ||
				logs.asked[0] != "op/memcached-operator-controller-manager-7d9f-x2x/manager") {
				t.Errorf("the log read was %v (previous %v), want the previous run of op/<pod>/manager", logs.asked, logs.previous)
			}
		})
	}
}

// Without a way to read logs the termination message is quoted (the tail of the log with
// terminationMessagePolicy FallbackToLogsOnError).
func TestCrashLoopingWithoutLogsQuotesTheTerminationMessage(t *testing.T) {
	pod := crashingPod(3)
	pod.Status.ContainerStatuses[0].LastTerminationState.Terminated.Message = scaffoldCrash
	c := fake.NewClientBuilder().WithScheme(crashScheme(t)).WithObjects(kindDeployment(), pod).Build()
	v := CrashLooping(context.Background(), c, nil, crashCSV())
	if !strings.Contains(v, "its termination message: the last error it logged: "+scaffoldCause) {
		t.Errorf("verdict: %s", v)
	}
}

// The install's wait stops at the verdict, long before its timeout, and its error says why and what
// to do; a failed wait's description quotes the previous run's log too.
func TestTheCSVWaitStopsWhenTheOperatorCrashLoops(t *testing.T) {
	csv := crashCSV()
	c := fake.NewClientBuilder().WithScheme(crashScheme(t)).WithObjects(csv, kindDeployment(), crashingPod(2)).Build()
	logs := &fakeLogs{log: scaffoldCrash}
	start := time.Now()
	_, err := waitForCSVPhase(context.Background(), c, logs.read, client.ObjectKeyFromObject(csv), operatorsv1alpha1.CSVPhaseSucceeded, time.Minute)
	if err == nil {
		t.Fatal("the wait succeeded")
	}
	t.Logf("the install's error: %v", err)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the wait took %s; a crash loop must end it within a few polls", d)
	}
	for _, w := range []string{"CSV op/memcached-operator.v0.0.1 will not reach phase Succeeded", "crash-looping",
		"stops after 3 exits", "exited 3 times", scaffoldCause, "lacks a file, flag or env var", "artifacts"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error lacks %q:\n%v", w, err)
		}
	}

	// Restarted once only: the wait times out, and its description quotes the previous run.
	c = fake.NewClientBuilder().WithScheme(crashScheme(t)).WithObjects(csv, kindDeployment(), crashingPod(0)).Build()
	_, err = waitForCSVPhase(context.Background(), c, logs.read, client.ObjectKeyFromObject(csv), operatorsv1alpha1.CSVPhaseSucceeded, 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "manager: last exit code 1 (Error); the last error it logged: "+scaffoldCause) {
		t.Errorf("a timed-out wait on an operator that restarted should quote its last run: %v", err)
	}
}

// PodLogsOf asks the API server for the container's log (client-go's fake answers "fake logs").
func TestPodLogsOfReadsThroughTheClientset(t *testing.T) {
	cs := kubefake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "p"}})
	got, err := PodLogsOf(cs)(context.Background(), "op", "p", "manager", true)
	if err != nil || got != "fake logs" {
		t.Errorf("PodLogsOf = %q, %v", got, err)
	}
}
