package stack

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// requiredOLMCRDs are what the framework drives; the other OLM CRDs are optional.
var requiredOLMCRDs = []string{"clusterserviceversions.operators.coreos.com", "operatorgroups.operators.coreos.com"}

// errNoOLM explains why the stack stops here.
const errNoOLM = "OLM is not installed on this cluster (missing CRDs: %s). The stack does not install OLM: " +
	"that needs OLM's images, which only the cluster can pull. Install OLM %s first (e.g. " +
	"`operator-sdk olm install --version %s`, or apply crds.yaml and olm.yaml of that OLM release), or " +
	"use CLEANUP_E2E_PROVIDER=envtest or CLEANUP_E2E_PROVIDER=kind (make e2e PROVIDER=...), which bring their own"

// requireOLM checks OLM's CRDs and that an olm-operator reconciles (olm.WaitReconciling, whose probe
// namespace is recorded when this run created it).
func (s *Stack) requireOLM(ctx context.Context) error {
	missing, err := missingCRDs(ctx, s.c, requiredOLMCRDs...)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf(errNoOLM, strings.Join(missing, ", "), toolchain.OLMVersion, toolchain.OLMVersion)
	}
	s.found.OLMNamespaces = OLMNamespaces(ctx, s.c)
	nsGVK := schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	existed, err := exists(ctx, s.c, nsGVK, "", olm.ProbeNamespace)
	if err != nil {
		return err
	}
	err = olm.WaitReconciling(ctx, s.c, s.in.Timeout)
	if !existed {
		s.ledger.recordLive(ctx, nsGVK, "", olm.ProbeNamespace)
	}
	if err != nil {
		return fmt.Errorf("OLM's CRDs are installed but no olm-operator reconciles (olm-operator Deployments seen in %v): %w",
			s.found.OLMNamespaces, err)
	}
	return nil
}

// OLMNamespaces lists the namespaces of olm-operator / catalog-operator Deployments (nil when the
// user may not list Deployments cluster-wide), e.g. for collecting their logs.
func OLMNamespaces(ctx context.Context, c client.Client) []string {
	seen := map[string]bool{}
	var out []string
	for _, name := range []string{"olm-operator", "catalog-operator"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DeploymentList"})
		if err := c.List(ctx, list, client.MatchingFields{"metadata.name": name}); err != nil {
			continue
		}
		for _, d := range list.Items {
			if !seen[d.GetNamespace()] {
				seen[d.GetNamespace()] = true
				out = append(out, d.GetNamespace())
			}
		}
	}
	return out
}
