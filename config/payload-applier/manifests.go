// Package payloadapplier embeds the manifests that deploy the payload applier: its namespace,
// ServiceAccount, cluster-wide RBAC and Deployment (image cleanup-e2e.local/payload-applier:v0.1.0,
// payload read from the ConfigMap payload-applier-payload). The ClusterOperator CRD it reports to is
// in config/crd (package crd).
package payloadapplier

import (
	"embed"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/manifests"
)

// Well-known names in the manifests.
const (
	Namespace        = "payload-applier"
	Name             = "payload-applier"
	Image            = "cleanup-e2e.local/payload-applier:v0.1.0"
	PayloadConfigMap = "payload-applier-payload"
	StateConfigMap   = "payload-applier-state"
)

// FS holds the YAML files.
//
//go:embed *.yaml
var FS embed.FS

// Objects decodes every manifest, in file order.
func Objects() ([]*unstructured.Unstructured, error) { return manifests.DecodeFS(FS, "*.yaml") }
