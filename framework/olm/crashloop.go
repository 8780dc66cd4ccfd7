package olm

import (
	"context"
	"fmt"
	"io"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/crashlog"
)

// CrashLoopExits is how many exits make an operator crash-looping for the waits on it: they stop
// there with a verdict naming the crash instead of waiting out their timeout. An operator that exits
// at start (a missing file, flag or env var) exits this often within seconds on envtest (the local
// runtime's back-off: 0.5 s, 1 s, 2 s) and within about a minute on kind (the kubelet's: 10 s, 20 s),
// and a working one never does during an install.
const CrashLoopExits = 3

// PodLogs reads the log of a container of a pod, of its previous run when previous is set (a
// crash-looping container's current run is a back-off with no log).
type PodLogs func(ctx context.Context, namespace, pod, container string, previous bool) (string, error)

// podLogLimit is how much of a container's log is read for its cause: its end.
const podLogLimit = 256 << 10

// PodLogsOf reads pod logs through cs (the controller-runtime client cannot: logs are not JSON).
func PodLogsOf(cs kubernetes.Interface) PodLogs {
	return func(ctx context.Context, namespace, pod, container string, previous bool) (string, error) {
		rc, err := cs.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous,
			LimitBytes: ptr.To[int64](podLogLimit)}).Stream(ctx)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		data, err := io.ReadAll(rc)
		return string(data), err
	}
}

// CrashLooping says whether an operator of csv crash-loops: a Deployment of its install strategy that
// exited CrashLoopExits times or more — on envtest as the local runtime's Available condition counts
// them, on a cluster with nodes as its pods' container statuses do. The verdict ("" when none does)
// names the Deployment, how often it exited and why: the last error the operator logged (the previous
// container's log, read with logs; nil leaves it to the container's termination message).
func CrashLooping(ctx context.Context, c client.Client, logs PodLogs, csv *operatorsv1alpha1.ClusterServiceVersion) string {
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		dep := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: csv.Namespace, Name: d.Name}, dep); err != nil {
			dep.Status = appsv1.DeploymentStatus{} // its pods may still say more
		}
		for _, cond := range dep.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable && cond.Status != corev1.ConditionTrue && cond.Reason == "CrashLoopBackOff" {
				if n, ok := crashlog.ExitsIn(cond.Message); ok && n >= CrashLoopExits {
					return fmt.Sprintf("deployment %s/%s: %s", dep.Namespace, dep.Name, cond.Message)
				}
			}
		}
		if d.Spec.Selector == nil {
			continue
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(csv.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
			continue
		}
		for i := range pods.Items {
			if v := crashLoopingPod(ctx, logs, &pods.Items[i]); v != "" {
				return fmt.Sprintf("deployment %s/%s: %s", csv.Namespace, d.Name, v)
			}
		}
	}
	return ""
}

// crashLoopingPod is the verdict on a pod with a container that exited CrashLoopExits times or more
// and is not running again ("" when none).
func crashLoopingPod(ctx context.Context, logs PodLogs, p *corev1.Pod) string {
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		n, down := exits(s)
		if !down || n < CrashLoopExits {
			continue
		}
		state := "terminated"
		if w := s.State.Waiting; w != nil {
			state = w.Reason
			if w.Message != "" {
				state += " (" + w.Message + ")"
			}
		}
		return fmt.Sprintf("container %s of pod %s exited %d times (restarts %d, now %s); %s", s.Name, p.Name, n,
			s.RestartCount, state, lastRun(ctx, logs, p, s))
	}
	return ""
}

// exits is how often the container exited, and whether it is down now (back-off or terminated): the
// kubelet counts a restart when it starts the container again, so one more exit than restarts while
// it waits out its back-off.
func exits(s corev1.ContainerStatus) (int, bool) {
	switch {
	case s.State.Terminated != nil:
		return int(s.RestartCount) + 1, true
	case s.State.Waiting != nil && s.LastTerminationState.Terminated != nil:
		return int(s.RestartCount) + 1, true
	}
	return int(s.RestartCount), false
}

// lastRun says how the container's last run ended: its exit code and the last error it logged,
// from its log (the previous run's while it waits to restart) or else its termination message.
func lastRun(ctx context.Context, logs PodLogs, p *corev1.Pod, s corev1.ContainerStatus) string {
	t := s.State.Terminated
	previous := t == nil
	if previous {
		t = s.LastTerminationState.Terminated
	}
	var parts []string
	if t != nil {
		parts = append(parts, fmt.Sprintf("last exit code %d (%s)", t.ExitCode, t.Reason))
	}
	if logs != nil {
		log, err := logs(ctx, p.Namespace, p.Name, s.Name, previous)
		if err == nil {
			return strings.Join(append(parts, crashlog.Describe(log)), "; ")
		}
		parts = append(parts, fmt.Sprintf("its log could not be read (%v)", err))
	}
	if t != nil && strings.TrimSpace(t.Message) != "" {
		// With terminationMessagePolicy FallbackToLogsOnError the message is the log's end.
		parts = append(parts, "its termination message: "+crashlog.Describe(t.Message))
	}
	if len(parts) == 0 {
		return "nothing says why"
	}
	return strings.Join(parts, "; ")
}
