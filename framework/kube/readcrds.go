package kube

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// ReadCRDs reads the CRDs in the YAML files at paths (a directory: its *.yaml, *.yml and *.json
// files), e.g. for stack.Components.CRDs: a CRD a bundle needs the cluster to serve (a ServiceMonitor)
// that no bundle installs. Any other kind in those files is an error naming the file.
func ReadCRDs(paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		files, err := manifestFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			crds, err := readCRDFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, crds...)
		}
	}
	return out, nil
}

// MustReadCRDs is ReadCRDs for package-level suite variables: it panics naming the file.
func MustReadCRDs(paths ...string) []*apiextensionsv1.CustomResourceDefinition {
	crds, err := ReadCRDs(paths...)
	if err != nil {
		panic(err)
	}
	return crds
}

func manifestFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read CRDs: %w", err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("read CRDs: %w", err)
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("read CRDs: directory %s has no .yaml, .yml or .json file", p)
	}
	return files, nil
}

func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CRDs: %w", err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
			return nil, fmt.Errorf("%s: document %d is a %q named %q, not a CustomResourceDefinition", path, i, crd.Kind, crd.Name)
		}
		out = append(out, crd)
	}
}
