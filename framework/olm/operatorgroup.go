package olm

import (
	"context"
	"fmt"
	"sort"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstallMode values, re-exported so callers need not import operator-framework/api.
const (
	OwnNamespace    = operatorsv1alpha1.InstallModeTypeOwnNamespace
	SingleNamespace = operatorsv1alpha1.InstallModeTypeSingleNamespace
	MultiNamespace  = operatorsv1alpha1.InstallModeTypeMultiNamespace
	AllNamespaces   = operatorsv1alpha1.InstallModeTypeAllNamespaces
)

// TargetNamespaces returns the OperatorGroup targets for an install mode: none for AllNamespaces,
// the operator's own namespace for OwnNamespace, and the given targets otherwise (validated).
func TargetNamespaces(mode operatorsv1alpha1.InstallModeType, operatorNamespace string, targets []string) ([]string, error) {
	switch mode {
	case AllNamespaces:
		if len(targets) > 0 {
			return nil, fmt.Errorf("install mode AllNamespaces takes no target namespaces, got %v", targets)
		}
		return nil, nil
	case OwnNamespace:
		if len(targets) > 0 && !(len(targets) == 1 && targets[0] == operatorNamespace) {
			return nil, fmt.Errorf("install mode OwnNamespace targets only the operator namespace %q, got %v", operatorNamespace, targets)
		}
		return []string{operatorNamespace}, nil
	case SingleNamespace:
		if len(targets) != 1 || targets[0] == "" {
			return nil, fmt.Errorf("install mode SingleNamespace needs exactly one target namespace, got %v", targets)
		}
		return targets, nil
	case MultiNamespace:
		if len(targets) < 1 {
			return nil, fmt.Errorf("install mode MultiNamespace needs target namespaces, got none")
		}
		out := append([]string{}, targets...)
		sort.Strings(out)
		return out, nil
	default:
		return nil, fmt.Errorf("unknown install mode %q (want OwnNamespace, SingleNamespace, MultiNamespace or AllNamespaces)", mode)
	}
}

// EnsureOperatorGroup creates the OperatorGroup for the install mode in the operator namespace, or
// checks that an existing one there has the same targets (OLM allows one per namespace).
func EnsureOperatorGroup(ctx context.Context, c client.Client, namespace string, targets []string) (*operatorsv1.OperatorGroup, error) {
	list := &operatorsv1.OperatorGroupList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	if len(list.Items) > 1 {
		return nil, fmt.Errorf("namespace %s has %d OperatorGroups; OLM allows one", namespace, len(list.Items))
	}
	if len(list.Items) == 1 {
		og := &list.Items[0]
		have := append([]string{}, og.Spec.TargetNamespaces...)
		sort.Strings(have)
		if fmt.Sprint(have) != fmt.Sprint(targets) {
			return nil, fmt.Errorf("OperatorGroup %s/%s targets %v, the install wants %v", namespace, og.Name, have, targets)
		}
		return og, nil
	}
	og := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: namespace},
		Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: targets}}
	if err := c.Create(ctx, og); err != nil {
		return nil, fmt.Errorf("create OperatorGroup %s/%s: %w", namespace, og.Name, err)
	}
	return og, nil
}
