package specs

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
)

// defaultPendingListCap is the controller's own default for --max-pending-listed.
const defaultPendingListCap = 100

const pendingListFlag = "--max-pending-listed"

// pendingListCap is the most operands the controller on the cluster lists as pending: set when the
// input sets it, else the --max-pending-listed of the operand-cleanup Deployment found there (the
// stack installs it with a small cap so that the spec needs few operands), else the controller's
// default.
func pendingListCap(ctx context.Context, c client.Client, set int) (int, error) {
	if set > 0 {
		return set, nil
	}
	key := types.NamespacedName{Namespace: operandcleanupconfig.Namespace, Name: operandcleanupconfig.Deployment}
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, key, dep); apierrors.IsNotFound(err) {
		return defaultPendingListCap, nil
	} else if err != nil {
		return 0, fmt.Errorf("read the operand-cleanup controller's Deployment %s for its %s: %w (or set PendingListCap)", key, pendingListFlag, err)
	}
	return capFromArgs(key.String(), dep.Spec.Template.Spec.Containers)
}

// capFromArgs reads --max-pending-listed from the first container's args ("--flag=N" or "--flag N",
// one or two dashes, the last one winning as in the controller's flag parsing).
func capFromArgs(deployment string, containers []corev1.Container) (int, error) {
	if len(containers) == 0 {
		return defaultPendingListCap, nil
	}
	args := append(append([]string{}, containers[0].Command...), containers[0].Args...)
	found := ""
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if "--"+name != pendingListFlag {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return 0, fmt.Errorf("Deployment %s, container %s: %s has no value", deployment, containers[0].Name, pendingListFlag)
			}
			value = args[i+1]
		}
		found = value
	}
	if found == "" {
		return defaultPendingListCap, nil
	}
	n, err := strconv.Atoi(found)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("Deployment %s, container %s: %s=%q is not a positive number", deployment, containers[0].Name, pendingListFlag, found)
	}
	return n, nil
}
