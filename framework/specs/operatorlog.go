package specs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/cleanup-e2e/cleanup-e2e/framework/artifacts"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/crashlog"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/podlogs"
)

// keepOperatorLog keeps what the operator writes from now on and returns its reader, for failure
// messages and verdicts that quote what the operator said about a custom resource, also once it is
// uninstalled. envtest's local runtime keeps each Deployment's log itself (cluster.WorkloadLogs; csv
// says which Deployments, read at each call: an upgrade changes it). On a cluster with nodes an
// uninstall deletes the operator's pods and their logs with them, so the logs of every pod of
// namespace (the spec's own operator namespace) are followed into a temporary directory until the spec
// ends, and copied to $ARTIFACTS/operator-logs/<namespace>/ when it failed.
func keepOperatorLog(ctx context.Context, t T, p cluster.Provider, namespace string,
	csv func() *operatorsv1alpha1.ClusterServiceVersion) (func() (string, error), error) {
	if kept, ok := p.(cluster.WorkloadLogs); ok {
		return func() (string, error) {
			var out []string
			for _, d := range csv().Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
				log, err := kept.WorkloadLog(namespace, d.Name)
				if err != nil {
					return strings.Join(out, "\n"), fmt.Errorf("Deployment %s/%s: %w", namespace, d.Name, err)
				}
				out = append(out, log)
			}
			return strings.Join(out, "\n"), nil
		}, nil
	}
	if p == nil || p.RESTConfig() == nil {
		return nil, nil
	}
	cs, err := kubernetes.NewForConfig(p.RESTConfig())
	if err != nil {
		return nil, err
	}
	return followPods(ctx, t, cs, namespace)
}

// followPods follows the logs of namespace's pods until t ends, leaving them among the artifacts when
// t failed, and returns their reader.
func followPods(ctx context.Context, t T, cs kubernetes.Interface, namespace string) (func() (string, error), error) {
	dir, err := os.MkdirTemp("", "operator-logs-")
	if err != nil {
		return nil, err
	}
	f, err := podlogs.Follow(context.WithoutCancel(ctx), cs, namespace, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	t.Cleanup(func(context.Context) {
		f.Stop()
		defer os.RemoveAll(dir)
		if !t.Failed() {
			return
		}
		keep, err := filepath.Abs(filepath.Join(artifacts.Dir(), "operator-logs", namespace))
		if err == nil {
			err = os.CopyFS(keep, os.DirFS(dir))
		}
		if err != nil {
			t.Logf("the logs of the pods in %s: keeping them among the artifacts: %v", namespace, err)
			return
		}
		t.Logf("the logs of the pods in %s, from the install on: %s", namespace, keep)
	})
	return func() (string, error) { return f.Text(intervals.Get(intervals.Request)), nil }, nil
}

// operatorSaid is, for each of objs its operator logged an error about, that error: a line per
// object, for a failure message ("" when it named none, or log is nil). Only the last error naming
// the object counts (crashlog.CauseAbout): the operator's own account of why it is still there.
func operatorSaid(log func() (string, error), objs []*unstructured.Unstructured) string {
	if log == nil || len(objs) == 0 {
		return ""
	}
	text, err := log()
	var out []string
	for _, o := range objs {
		if q, ok := crashlog.CauseAbout(text, o.GetName(), o.GetNamespace()); ok {
			out = append(out, fmt.Sprintf("\n  %s %s: its operator's last error about it: %s", o.GetKind(), describeKey(o), q))
		}
	}
	if err != nil {
		out = append(out, fmt.Sprintf("\n  (the operator's log could not be read in full: %v)", err))
	}
	return strings.Join(out, "")
}

// followOperator keeps the operator's log from its install on (keepOperatorLog), for the verdicts and
// the waits' failure messages. Once per Extension.
func (x *Extension) followOperator(ctx context.Context) {
	if x.operatorLog != nil {
		return
	}
	log, err := keepOperatorLog(ctx, x.t, x.in.Environment().Provider, x.all[0],
		func() *operatorsv1alpha1.ClusterServiceVersion { return x.csv })
	x.g.Expect(err).NotTo(HaveOccurred(), "keep the operator's log")
	x.operatorLog = log
}
