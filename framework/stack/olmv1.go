package stack

import (
	"context"
	"fmt"
	"strings"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// errNoOLMv1 explains why the stack stops here, as errNoOLM does for OLM v0.
const errNoOLMv1 = "OLM v1 is not installed on this cluster (missing CRDs: %s). The stack does not install it: use " +
	"CLEANUP_E2E_PROVIDER=envtest or kind, which bring their own (operator-controller and catalogd %s), or install " +
	"OLM v1 %s on your cluster (its release's install.sh) and publish a registry for test bundles (%s)"

// requireOLMv1 checks OLM v1's CRDs and the published registry the OLM v1 specs push bundles to.
func (s *Stack) requireOLMv1(ctx context.Context) error {
	crds := []string{"clusterextensions.olm.operatorframework.io", "clustercatalogs.olm.operatorframework.io"}
	missing, err := missingCRDs(ctx, s.c, crds...)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf(errNoOLMv1, strings.Join(missing, ", "), olmv1.Version, olmv1.Version, olmv1.RegistryConfigMap)
	}
	_, err = olmv1.Published(ctx, s.c)
	return err
}
