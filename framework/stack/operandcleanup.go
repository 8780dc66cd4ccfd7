package stack

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// testArgs are the flags a stack installs the controller with before
// Components.OperandCleanupArgs (which win by name). The cap on the pending list is 10 instead of
// 100: the spec library's cap case creates the cap plus 20 operands and reads the cap from the
// Deployment, so it needs 30 operands instead of 120 (120 Memcacheds are 120 Deployments on kind),
// and the cap's code path is the same.
var testArgs = []string{"--max-pending-listed=10"}

// ensureOperandCleanup reuses a controller that is there (waiting for it to be available, never
// changing it, so OperandCleanupArgs do not apply to it) or installs the missing pieces of
// config/operand-cleanup. It returns whether the controller's Deployment was there already.
func (s *Stack) ensureOperandCleanup(ctx context.Context) (bool, error) {
	objs, err := operandcleanupconfig.Objects()
	if err != nil {
		return false, err
	}
	var missing []*unstructured.Unstructured
	for _, o := range objs {
		ok, err := exists(ctx, s.c, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
		if err != nil {
			return false, err
		}
		if !ok {
			missing = append(missing, o)
		}
	}
	depKey := types.NamespacedName{Namespace: operandcleanupconfig.Namespace, Name: operandcleanupconfig.Deployment}
	found := true
	for _, o := range missing {
		found = found && !(o.GetKind() == "Deployment" && o.GetName() == depKey.Name)
	}
	switch {
	case len(missing) == 0:
		s.in.Log.Info("found the operand-cleanup controller; leaving it alone", "deployment", depKey.String())
	case len(missing) == len(objs):
		err := components.InstallOperandCleanup(ctx, components.InstallOperandCleanupInput{Client: s.c, Image: s.in.OperandCleanupImage,
			Args: append(append([]string{}, testArgs...), s.in.OperandCleanupArgs...), Timeout: s.in.Timeout})
		for _, o := range objs {
			s.ledger.recordLive(ctx, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
		}
		if err != nil {
			return false, fmt.Errorf("%w (%s)", err, s.imageHint())
		}
		s.in.Log.Info("installed the operand-cleanup controller", "deployment", depKey.String())
		return false, nil
	default:
		for _, o := range missing {
			if err := components.SetOperandCleanupImage(o, s.in.OperandCleanupImage); err != nil {
				return false, err
			}
			if err := kube.Apply(ctx, s.c, o); err != nil {
				return false, err
			}
			s.ledger.recordLive(ctx, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
		}
		s.in.Log.Info("installed the missing pieces of the operand-cleanup controller", "created", s.Created())
	}
	if err := kube.WaitDeploymentAvailable(ctx, s.c, depKey, s.in.Timeout); err != nil {
		if found {
			return found, fmt.Errorf("the operand-cleanup controller found on the cluster (not created by this run, so left as it is) is not available: %w", err)
		}
		return found, fmt.Errorf("%w (%s)", err, s.imageHint())
	}
	return found, nil
}

// imageHint says what the controller's image needs, when its Deployment does not become available.
func (s *Stack) imageHint() string {
	if img := s.in.OperandCleanupImage; img != "" && img != operandcleanupconfig.Image {
		return "its image " + img + " (Stack.OperandCleanupImage) must be pullable by the cluster's nodes"
	}
	return "its image " + operandcleanupconfig.Image + " must be runnable by the cluster: load it " +
		"(kind load docker-image) on every node, or push the image scripts/images.sh builds to a registry " +
		"your nodes pull from and name it in Stack.OperandCleanupImage; a node-less cluster runs no pods by " +
		"itself (the envtest provider runs it in-process when its Registry has the image)"
}
