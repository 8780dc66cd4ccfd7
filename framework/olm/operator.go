package olm

import (
	"context"
	"fmt"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DescribeOperator says how the CSV's operator is doing, for failure messages: per Deployment of its
// install strategy, whether it is Available and, when not, the condition's reason and message (on
// envtest the local runtime writes there how often the operator exited and its last error), then what
// its pods say (waiting reasons, restarts, exit codes) where pods exist. A wait that fails because the
// operator crash-loops thus names the crash, not only the step that timed out.
func DescribeOperator(ctx context.Context, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion) string {
	return DescribeOperatorLogs(ctx, c, nil, csv)
}

// DescribeOperatorLogs is DescribeOperator quoting, for each container that has restarted, the last
// error its previous run logged (read with logs; nil: only the pods' statuses).
func DescribeOperatorLogs(ctx context.Context, c client.Client, logs PodLogs, csv *operatorsv1alpha1.ClusterServiceVersion) string {
	var out []string
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		dep := &appsv1.Deployment{}
		switch err := c.Get(ctx, client.ObjectKey{Namespace: csv.Namespace, Name: d.Name}, dep); {
		case apierrors.IsNotFound(err):
			out = append(out, fmt.Sprintf("deployment %s/%s not created (yet)", csv.Namespace, d.Name))
			continue
		case err != nil:
			out = append(out, fmt.Sprintf("deployment %s/%s: %v", csv.Namespace, d.Name, err))
			continue
		}
		out = append(out, describeDeployment(dep))
		if d.Spec.Selector == nil {
			continue
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(csv.Namespace), client.MatchingLabels(d.Spec.Selector.MatchLabels)); err != nil {
			out = append(out, fmt.Sprintf("pods of deployment %s: %v", d.Name, err))
			continue
		}
		for i := range pods.Items {
			out = append(out, describePod(ctx, logs, &pods.Items[i]))
		}
	}
	if len(out) == 0 {
		return fmt.Sprintf("CSV %s has no deployments", csv.Name)
	}
	return strings.Join(out, "; ")
}

func describeDeployment(dep *appsv1.Deployment) string {
	for _, cond := range dep.Status.Conditions {
		if cond.Type == appsv1.DeploymentAvailable {
			if cond.Status == corev1.ConditionTrue {
				return fmt.Sprintf("deployment %s/%s available (%d/%d ready)", dep.Namespace, dep.Name, dep.Status.ReadyReplicas, dep.Status.Replicas)
			}
			return fmt.Sprintf("deployment %s/%s not available: %s: %s", dep.Namespace, dep.Name, cond.Reason, cond.Message)
		}
	}
	return fmt.Sprintf("deployment %s/%s has no Available condition yet (no controller or kubelet acted on it)", dep.Namespace, dep.Name)
}

// describePod is a pod's phase and, per container, why it is not ready (waiting/terminated reasons)
// and, for one that restarted, how its last run ended (lastRun).
func describePod(ctx context.Context, logs PodLogs, p *corev1.Pod) string {
	parts := []string{fmt.Sprintf("pod %s %s", p.Name, p.Status.Phase)}
	for _, cond := range p.Status.Conditions {
		if cond.Status != corev1.ConditionTrue && cond.Message != "" {
			parts = append(parts, fmt.Sprintf("%s=%s %q", cond.Type, cond.Status, cond.Message))
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		switch {
		case s.State.Waiting != nil:
			parts = append(parts, fmt.Sprintf("%s waiting %s %q (restarts %d)", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message, s.RestartCount))
		case s.State.Terminated != nil && s.State.Terminated.ExitCode != 0:
			parts = append(parts, fmt.Sprintf("%s terminated %s exit %d %q", s.Name, s.State.Terminated.Reason, s.State.Terminated.ExitCode, strings.TrimSpace(s.State.Terminated.Message)))
		case s.State.Running != nil && !s.Ready:
			parts = append(parts, fmt.Sprintf("%s running, not ready (restarts %d)", s.Name, s.RestartCount))
		}
		if _, down := exits(s); down || s.RestartCount > 0 && !s.Ready {
			parts = append(parts, fmt.Sprintf("%s: %s", s.Name, lastRun(ctx, logs, p, s)))
		}
	}
	return strings.Join(parts, ", ")
}
