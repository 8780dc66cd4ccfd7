package kube

import (
	"context"
	"fmt"
	"maps"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ApplyCRDs creates or updates the CRDs (spec and labels; other labels kept) and waits until c can use
// them (WaitCRDsUsable), so that objects of their kinds can be created through c right after.
func ApplyCRDs(ctx context.Context, c client.Client, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	for _, src := range crds {
		if err := applyCRD(ctx, c, src); err != nil {
			return fmt.Errorf("apply CRD %s: %w", src.Name, err)
		}
	}
	return WaitCRDsUsable(ctx, c, crdNames(crds)...)
}

// applyCRD creates or updates one CRD, again from a fresh read when it lost a race: another process
// of the run applying the same CRD (Ginkgo processes share a cluster) created it between the read and
// the create, or the API server wrote its status between the read and the update (a conflict that
// that failed an e2e/cleanup spec in make test: docs/flakes.md).
func applyCRD(ctx context.Context, c client.Client, src *apiextensionsv1.CustomResourceDefinition) error {
	lostRace := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	return retry.OnError(retry.DefaultRetry, lostRace, func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Name = src.Name
		_, err := controllerutil.CreateOrUpdate(ctx, c, crd, func() error {
			if len(src.Labels) > 0 && crd.Labels == nil {
				crd.Labels = map[string]string{}
			}
			maps.Copy(crd.Labels, src.Labels)
			crd.Spec = src.Spec
			return nil
		})
		return err
	})
}

// EnsureCRDs creates the CRDs that do not exist yet, leaves existing ones exactly as they are (on an
// existing cluster they may be the real thing, e.g. OpenShift's ClusterOperator), and waits until c can
// use each of them as the cluster serves it (WaitCRDsUsable).
func EnsureCRDs(ctx context.Context, c client.Client, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		if err := client.IgnoreAlreadyExists(c.Create(ctx, crd.DeepCopy())); err != nil {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
	}
	return WaitCRDsUsable(ctx, c, crdNames(crds)...)
}

func crdNames(crds []*apiextensionsv1.CustomResourceDefinition) []string {
	names := make([]string, len(crds))
	for i, crd := range crds {
		names[i] = crd.Name
	}
	return names
}
