// Package crd embeds the CustomResourceDefinitions this project ships in config/crd/.
package crd

import (
	_ "embed"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// ClusterOperatorYAML is the config.openshift.io/v1 ClusterOperator CRD.
//
//go:embed config.openshift.io_clusteroperators.yaml
var ClusterOperatorYAML []byte

// ClusterOperator decodes ClusterOperatorYAML (e.g. for envtest's CRDInstallOptions.CRDs).
func ClusterOperator() (*apiextensionsv1.CustomResourceDefinition, error) {
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(ClusterOperatorYAML, &c); err != nil {
		return nil, fmt.Errorf("config/crd/config.openshift.io_clusteroperators.yaml: %w", err)
	}
	return &c, nil
}
