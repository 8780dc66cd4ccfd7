// Package crd embeds the CustomResourceDefinitions this project ships in config/crd/.
package crd

import _ "embed"

// ClusterOperatorYAML is the config.openshift.io/v1 ClusterOperator CRD.
//
//go:embed config.openshift.io_clusteroperators.yaml
var ClusterOperatorYAML []byte
