package specs_test

import (
	"os"
	"path/filepath"
	"testing"
)

// writeBundle writes a registry-v1 bundle holding only csvYAML (and the given extra manifests) to a
// temporary directory and returns it.
func writeBundle(t *testing.T, csvYAML string, manifests ...string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"metadata/annotations.yaml": "annotations:\n  operators.operatorframework.io.bundle.package.v1: test-operator\n",
		"manifests/csv.yaml":        csvYAML,
	}
	for i, m := range manifests {
		files[filepath.Join("manifests", "extra-"+string(rune('a'+i))+".yaml")] = m
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
