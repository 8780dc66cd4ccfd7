package kube

import (
	"context"
	"fmt"
	"maps"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// CRDEstablishTimeout bounds how long ApplyCRDs waits for each CRD to be served.
const CRDEstablishTimeout = time.Minute

// ApplyCRDs creates or updates the CRDs (spec and labels; other labels kept) and waits until each is
// Established, so that objects of their kinds can be created right after.
func ApplyCRDs(ctx context.Context, c client.Client, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	for _, src := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Name = src.Name
		if _, err := controllerutil.CreateOrUpdate(ctx, c, crd, func() error {
			if len(src.Labels) > 0 && crd.Labels == nil {
				crd.Labels = map[string]string{}
			}
			maps.Copy(crd.Labels, src.Labels)
			crd.Spec = src.Spec
			return nil
		}); err != nil {
			return fmt.Errorf("apply CRD %s: %w", src.Name, err)
		}
	}
	for _, src := range crds {
		if err := WaitCRDEstablished(ctx, c, src.Name, CRDEstablishTimeout); err != nil {
			return err
		}
	}
	return nil
}

// WaitCRDEstablished waits until the CRD has Established=True.
func WaitCRDEstablished(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	return Poll(ctx, timeout, func() (bool, string) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, fmt.Sprintf("CRD %s: %v", name, err)
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("CRD %s is not Established yet (conditions: %v)", name, crd.Status.Conditions)
	})
}

// EnsureCRDs creates the CRDs that do not exist yet, leaves existing ones exactly as they are (on an
// existing cluster they may be the real thing, e.g. OpenShift's ClusterOperator), and waits until each
// is Established.
func EnsureCRDs(ctx context.Context, c client.Client, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, crd.DeepCopy())); err != nil {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		if err := WaitCRDEstablished(ctx, c, crd.Name, CRDEstablishTimeout); err != nil {
			return err
		}
	}
	return nil
}
