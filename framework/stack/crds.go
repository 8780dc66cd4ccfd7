package stack

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
)

// ensureCRDs creates the CRDs that are missing (never changing one that is there: it may be the
// cluster's real one, e.g. OpenShift's ClusterOperator) and waits until clients can use all of them.
// It returns whether every CRD was there already.
func (s *Stack) ensureCRDs(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) (bool, error) {
	names := make([]string, len(crds))
	for i, crd := range crds {
		names[i] = crd.Name
	}
	missing, err := missingCRDs(ctx, s.c, names...)
	if err != nil {
		return false, err
	}
	switch {
	case len(missing) == 0:
		s.in.Log.Info("found the CRDs; leaving them alone", "crds", names)
	default:
		for _, crd := range crds {
			if !slices.Contains(missing, crd.Name) {
				continue
			}
			created := crd.DeepCopy()
			err := s.c.Create(ctx, created)
			if apierrors.IsAlreadyExists(err) {
				// Someone else made it since missingCRDs looked: theirs, never recorded as the run's.
				s.in.Log.Info("a CRD appeared while the stack created it; leaving it alone", "crd", crd.Name)
				continue
			}
			if err != nil {
				return false, fmt.Errorf("create CRD %s: %w", crd.Name, err)
			}
			// The UID the Create answered with: a read after it could find another's object.
			s.ledger.record(entry{gvk: apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"), name: crd.Name, uid: created.UID})
		}
		s.in.Log.Info("installed the missing CRDs", "crds", missing)
	}
	// Existing is not usable yet: specs create custom resources right after.
	return len(missing) == 0, kube.WaitCRDsUsable(ctx, s.c, names...)
}

// missingCRDs returns the names of the CRDs that do not exist. It reads their metadata only: OLM's
// CRDs, which every start with OLM asks for, are large (the CSV's alone 0.8 MB of YAML).
func missingCRDs(ctx context.Context, c client.Client, names ...string) ([]string, error) {
	var missing []string
	for _, n := range names {
		err := c.Get(ctx, types.NamespacedName{Name: n}, crdMetadata())
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, n)
		case err != nil:
			return nil, fmt.Errorf("read CRD %s: %w", n, err)
		}
	}
	return missing, nil
}

func exists(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, ns, name string) (bool, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s %s/%s: %w", gvk.Kind, ns, name, err)
	}
	return true, nil
}

// crdMetadata is a CRD's metadata, for reads that need no more: the API server then sends only that.
func crdMetadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	return m
}
