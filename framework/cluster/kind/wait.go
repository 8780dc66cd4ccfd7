package kind

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// waitUsable waits (the named wait, or within timeout when > 0) until the API server answers, every
// node is Ready, CoreDNS and kube-proxy are fully available and the default ServiceAccount exists (pods
// cannot be created before). On timeout it says what was missing.
func (p *Provider) waitUsable(ctx context.Context, n intervals.Name, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(p.cfg)
	if err != nil {
		return err
	}
	// Once a second: each check is a round of requests, and a node takes seconds to get Ready.
	err = intervals.Wait(ctx, n, func() (bool, string) {
		missing := usable(ctx, cs)
		return missing == "", missing
	}, intervals.Within(timeout), intervals.Every(time.Second))
	if err != nil {
		return fmt.Errorf("cluster %s not usable: %w", p.opts.name, err)
	}
	return nil
}

// usable returns "" when the cluster is usable, else what is missing.
func usable(ctx context.Context, cs kubernetes.Interface) string {
	rctx, cancel := context.WithTimeout(ctx, intervals.Get(intervals.Request))
	defer cancel()
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx); err != nil {
		return fmt.Sprintf("API server not ready: %v", err)
	}
	nodes, err := cs.CoreV1().Nodes().List(rctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Sprintf("list nodes: %v", err)
	}
	if len(nodes.Items) == 0 {
		return "no node registered"
	}
	for _, n := range nodes.Items {
		if pressure := nodeCondition(n, corev1.NodeDiskPressure); pressure != nil && pressure.Status == corev1.ConditionTrue {
			return fmt.Sprintf("node %s has DiskPressure (%s): the Docker host's disk is nearly full, free space there", n.Name, pressure.Message)
		}
		if ready := nodeCondition(n, corev1.NodeReady); ready == nil || ready.Status != corev1.ConditionTrue {
			return fmt.Sprintf("node %s not Ready", n.Name)
		}
	}
	dns, err := cs.AppsV1().Deployments("kube-system").Get(rctx, "coredns", metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("get CoreDNS deployment: %v", err)
	}
	want := int32(1)
	if dns.Spec.Replicas != nil {
		want = *dns.Spec.Replicas
	}
	if dns.Status.AvailableReplicas < want {
		return fmt.Sprintf("CoreDNS %d/%d available", dns.Status.AvailableReplicas, want)
	}
	// kind clusters always run kube-proxy (Services need it); a missing DaemonSet is not waited for.
	if proxy, err := cs.AppsV1().DaemonSets("kube-system").Get(rctx, "kube-proxy", metav1.GetOptions{}); err == nil &&
		(proxy.Status.DesiredNumberScheduled == 0 || proxy.Status.NumberAvailable < proxy.Status.DesiredNumberScheduled) {
		return fmt.Sprintf("kube-proxy %d/%d available", proxy.Status.NumberAvailable, proxy.Status.DesiredNumberScheduled)
	}
	if _, err := cs.CoreV1().ServiceAccounts("default").Get(rctx, "default", metav1.GetOptions{}); err != nil {
		return fmt.Sprintf("default ServiceAccount: %v", err)
	}
	return ""
}

func nodeCondition(n corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
