// Package components installs the systems under test next to OLM from the manifests under config/,
// with settings a spec may shorten (timeouts): the operand-cleanup controller here, the payload
// applier in components/payloadapplier (apart, so that an operator repo's suite does not link it).
package components

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// OperandCleanupImage is the controller's image; the envtest provider runs it in-process.
const OperandCleanupImage = operandcleanupconfig.Image

// InstallOperandCleanupInput configures the operand-cleanup controller install.
type InstallOperandCleanupInput struct {
	Client client.Client
	// Image is the controller's image (default OperandCleanupImage): on a cluster whose nodes pull from
	// a registry, the image as pushed there.
	Image string
	// Args override the Deployment's flags by name (e.g. "--stall-timeout=5s").
	Args    []string
	Timeout time.Duration
}

// InstallOperandCleanup applies the controller's manifests and waits until its Deployment is available.
func InstallOperandCleanup(ctx context.Context, in InstallOperandCleanupInput) error {
	objs, err := operandcleanupconfig.Objects()
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := SetOperandCleanupImage(o, in.Image); err != nil {
			return err
		}
		if o.GetKind() == "Deployment" {
			if err := OverrideArgs(o, in.Args); err != nil {
				return err
			}
		}
	}
	if err := kube.Apply(ctx, in.Client, objs...); err != nil {
		return fmt.Errorf("install operand-cleanup controller: %w", err)
	}
	timeout := intervals.Or(in.Timeout, intervals.DeploymentAvailable)
	key := types.NamespacedName{Namespace: operandcleanupconfig.Namespace, Name: operandcleanupconfig.Deployment}
	return kube.WaitDeploymentAvailable(ctx, in.Client, key, timeout)
}

// SetOperandCleanupImage sets image ("" leaves it) on the controller's Deployment among its manifests;
// other objects are left as they are.
func SetOperandCleanupImage(o *unstructured.Unstructured, image string) error {
	if image == "" || o.GetKind() != "Deployment" || o.GetName() != operandcleanupconfig.Deployment {
		return nil
	}
	containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if err != nil || len(containers) == 0 {
		return fmt.Errorf("deployment %s has no containers (%v)", o.GetName(), err)
	}
	containers[0].(map[string]any)["image"] = image
	return unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
}

// OverrideArgs replaces flags of the first container by name and appends the new ones.
func OverrideArgs(dep *unstructured.Unstructured, overrides []string) error {
	if len(overrides) == 0 {
		return nil
	}
	containers, _, err := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if err != nil || len(containers) == 0 {
		return fmt.Errorf("deployment %s has no containers (%v)", dep.GetName(), err)
	}
	ctr := containers[0].(map[string]any)
	var args []string
	for _, a := range ctr["args"].([]any) {
		args = append(args, a.(string))
	}
	for _, o := range overrides {
		name, _, _ := strings.Cut(o, "=")
		replaced := false
		for i, a := range args {
			if n, _, _ := strings.Cut(a, "="); n == name {
				args[i], replaced = o, true
			}
		}
		if !replaced {
			args = append(args, o)
		}
	}
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	ctr["args"] = out
	containers[0] = ctr
	return unstructured.SetNestedSlice(dep.Object, containers, "spec", "template", "spec", "containers")
}
