// Package olm installs, drives and observes Operator Lifecycle Manager on a provider: OLM's own CRDs,
// readiness, and operators installed from bundles (directly as a CSV, or through a catalog).
package olm

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-framework/api/crds"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// CRDs returns every CRD OLM v0 needs (CSV, Subscription, OperatorGroup, OLMConfig, ...), from
// operator-framework/api's crds package so that they match the API types this module uses.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names := crds.AssetNames()
	sort.Strings(names)
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		data, err := crds.Asset(name)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(crd); err != nil {
			return nil, fmt.Errorf("decode OLM CRD %s: %w", name, err)
		}
		out = append(out, crd)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("operator-framework/api's crds package holds no CRDs")
	}
	return out, nil
}
