package specs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// crdTerminating is the API server's refusal of a create while the kind's CRD is being deleted.
const crdTerminating = "while custom resource definition is terminating"

// explainCRDTerminating adds to a create refused because the kind's CRD is terminating what keeps it
// so: the custom resources left, with their finalizers. Usually an uninstall that deleted the CRD
// while an operator's finalizer was on custom resources it no longer runs for.
func explainCRDTerminating(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, err error) error {
	if err == nil || !strings.Contains(err.Error(), crdTerminating) {
		return err
	}
	m, merr := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if merr != nil {
		return err
	}
	name := m.Resource.Resource + "." + gvk.Group
	crd, cerr := liveCRD(ctx, c, name)
	if cerr != nil || crd == nil || crd.DeletionTimestamp == nil {
		return err
	}
	crs, lerr := listCRs(ctx, c, crd)
	if lerr != nil {
		return fmt.Errorf("%w; CRD %s deleted %s ago: %v", err, name, time.Since(crd.DeletionTimestamp.Time).Round(time.Second), lerr)
	}
	var left []string
	for i, cr := range crs {
		if i == 5 {
			left = append(left, fmt.Sprintf("… %d more", len(crs)-5))
			break
		}
		left = append(left, fmt.Sprintf("%s (finalizers %v)", describeKey(&cr), cr.GetFinalizers()))
	}
	return fmt.Errorf("%w; CRD %s was deleted %s ago and waits for its %d custom resource(s): %s. Something deleted the CRD "+
		"while a finalizer whose operator no longer runs was on them (an OLM v1 uninstall of an earlier spec, or a spec "+
		"that did not hold this API: specs.HoldAPIsOf)", err, name, time.Since(crd.DeletionTimestamp.Time).Round(time.Second),
		len(crs), strings.Join(left, ", "))
}
