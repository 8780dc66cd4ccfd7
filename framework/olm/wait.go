package olm

import (
	"context"
	"fmt"
	"strings"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// WaitForCSVPhase waits until the CSV reaches phase. On timeout the error names the CSV, its phase,
// reason and message, and every requirement that is not Present. An operator of the CSV that
// crash-loops (CrashLooping) ends the wait early, with an error naming the crash.
func WaitForCSVPhase(ctx context.Context, c client.Client, key types.NamespacedName, phase operatorsv1alpha1.ClusterServiceVersionPhase, timeout time.Duration) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	return waitForCSVPhase(ctx, c, nil, key, phase, timeout)
}

// crashCheckEvery is how many polls of the CSV pass between two looks at its operator (a Deployment
// get and a pod list per Deployment): about once a second.
const crashCheckEvery = 4

// waitForCSVPhase is WaitForCSVPhase reading a crash-looping operator's last log with logs (nil: its
// termination message only).
func waitForCSVPhase(ctx context.Context, c client.Client, logs PodLogs, key types.NamespacedName,
	phase operatorsv1alpha1.ClusterServiceVersionPhase, timeout time.Duration) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	polls, crashing := 0, ""
	err := intervals.Wait(ctx, intervals.CSVSucceeded, func() (bool, string) {
		if err := c.Get(ctx, key, csv); err != nil {
			return false, fmt.Sprintf("CSV %s: %v", key, err)
		}
		if csv.Status.Phase == phase {
			return true, ""
		}
		if polls++; polls%crashCheckEvery == 0 {
			if crashing = CrashLooping(ctx, c, logs, csv); crashing != "" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("CSV %s wants phase %s: %s", key, phase, DescribeCSV(csv))
	}, explainOperator(c, logs, csv), intervals.Within(timeout))
	if err != nil {
		// The timeout may come before the periodic check saw the last exits: the verdict names the crash loop.
		if csv.Name != "" {
			if v := CrashLooping(ctx, c, logs, csv); v != "" {
				return nil, fmt.Errorf("CSV %s did not reach phase %s within %s: its operator is crash-looping: %s. Fix what it logged; "+
					"every run's whole log is in the failed spec's artifacts", key, phase, timeout, v)
			}
		}
		return nil, err
	}
	if crashing != "" {
		return nil, crashLoopError(key, phase, timeout, crashing)
	}
	return csv, nil
}

// crashLoopError is the verdict of a wait for a CSV's phase that stopped on its operator's crash loop.
func crashLoopError(key types.NamespacedName, phase operatorsv1alpha1.ClusterServiceVersionPhase, timeout time.Duration, crashing string) error {
	return fmt.Errorf("CSV %s will not reach phase %s: its operator is crash-looping (the wait stops after %d exits "+
		"instead of waiting out %s): %s. Fix what it logged: an operator that exits at start usually lacks a file, flag or "+
		"env var that its Deployment in the CSV does not give it; every run's whole log is in the failed spec's artifacts",
		key, phase, CrashLoopExits, timeout, crashing)
}

// explainOperator says how the operator of csv (the last one read) is doing, once a wait has failed;
// nothing when the CSV was never read.
func explainOperator(c client.Client, logs PodLogs, csv *operatorsv1alpha1.ClusterServiceVersion) intervals.WaitOption {
	return intervals.Explain(func(ctx context.Context) string {
		if csv.Name == "" {
			return ""
		}
		return "operator: " + DescribeOperatorLogs(ctx, c, logs, csv)
	})
}

// WaitForCSVGone waits until the CSV no longer exists.
func WaitForCSVGone(ctx context.Context, c client.Client, key types.NamespacedName, timeout time.Duration) error {
	return intervals.Wait(ctx, intervals.Gone, func() (bool, string) {
		csv := &operatorsv1alpha1.ClusterServiceVersion{}
		err := c.Get(ctx, key, csv)
		if isGone(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("CSV %s still exists (finalizers %v, deletionTimestamp %v): %s",
			key, csv.Finalizers, csv.DeletionTimestamp, DescribeCSV(csv))
	}, intervals.Within(timeout))
}

// DescribeCSV summarises a CSV's state for failure messages.
func DescribeCSV(csv *operatorsv1alpha1.ClusterServiceVersion) string {
	var missing []string
	for _, r := range csv.Status.RequirementStatus {
		if r.Status != operatorsv1alpha1.RequirementStatusReasonPresent {
			missing = append(missing, fmt.Sprintf("%s %s %s (%s)", r.Kind, r.Name, r.Status, r.Message))
		}
	}
	s := fmt.Sprintf("phase=%q reason=%q message=%q", csv.Status.Phase, csv.Status.Reason, csv.Status.Message)
	if len(missing) > 0 {
		s += "; requirements not present: " + strings.Join(missing, "; ")
	}
	return s
}
