// Package payloadapplier embeds the manifests that deploy the payload applier: its namespace,
// ServiceAccount, cluster-wide RBAC and Deployment (image cleanup-e2e.local/payload-applier:v0.1.0,
// payload read from the ConfigMap payload-applier-payload). The ClusterOperator CRD it reports to is
// in config/crd (package crd).
package payloadapplier

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
func Objects() ([]*unstructured.Unstructured, error) {
	names, err := fs.Glob(FS, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, n := range names {
		data, err := FS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			out = append(out, u)
		}
	}
	return out, nil
}
