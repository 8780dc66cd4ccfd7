package stack

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime/schema"

	crdconfig "github.com/cleanup-e2e/cleanup-e2e/config/crd"
	operandcleanupconfig "github.com/cleanup-e2e/cleanup-e2e/config/operand-cleanup"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// Missing lists what Ensure would create on the cluster now ("Kind namespace/name"), reading only, and
// which of it is disruptive (Components.Disruptive): it changes how the cluster behaves for everyone
// while it is there — the ClusterOperator CRD: olm-operator, once restarted, takes the cluster for
// OpenShift and waits for a Proxy API it lacks. The rest only adds objects other runs may use too.
func Missing(ctx context.Context, in Input) (missing, disruptive []string, err error) {
	if in.Client == nil {
		return nil, nil, errors.New("stack.Input.Client is nil: pass an admin client of the cluster")
	}
	var out []string
	add := func(gvk schema.GroupVersionKind, ns, name string) error {
		ok, err := exists(ctx, in.Client, gvk, ns, name)
		if err == nil && !ok {
			out = append(out, entry{gvk: gvk, namespace: ns, name: name}.String())
		}
		return err
	}
	crdGVK := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	if in.OLM {
		if err := add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "", olm.ProbeNamespace); err != nil {
			return nil, nil, err
		}
	}
	if in.ClusterOperatorCRD {
		crd, err := crdconfig.ClusterOperator()
		if err != nil {
			return nil, nil, err
		}
		n := len(out)
		if err := add(crdGVK, "", crd.Name); err != nil {
			return nil, nil, err
		}
		disruptive = out[n:]
	}
	for _, crd := range in.CRDs {
		if err := add(crdGVK, "", crd.Name); err != nil {
			return nil, nil, err
		}
	}
	if in.OperandCleanup {
		objs, err := operandcleanupconfig.Objects()
		if err != nil {
			return nil, nil, err
		}
		for _, o := range objs {
			if err := add(o.GroupVersionKind(), o.GetNamespace(), o.GetName()); err != nil {
				return nil, nil, err
			}
		}
	}
	return out, disruptive, nil
}

// MayRemove reports whether Teardown may delete anything: what Ensure created, or a footprint the
// specs may have added to (known only at Teardown).
func (s *Stack) MayRemove() bool {
	return len(s.Created()) > 0 || len(s.in.Footprint.CRDGroups) > 0 || len(s.in.Footprint.Namespaces) > 0
}
