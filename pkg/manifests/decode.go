// Package manifests decodes multi-document YAML (or JSON) manifests into unstructured objects: the one
// decoder behind the embedded config/ manifests and OLM's upstream install manifests.
package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Decode returns every non-empty document of data; errors name source and the document index.
func Decode(data []byte, source string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s document %d: %w", source, i, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// DecodeFS decodes the files of fsys matching pattern, in file-name order (the apply order).
func DecodeFS(fsys fs.FS, pattern string) ([]*unstructured.Unstructured, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		objs, err := Decode(data, n)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}
