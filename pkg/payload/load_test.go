package payload_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
)

func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadOrderExtensionsAndMultiDoc(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"release-metadata":       `{"kind":"cincinnati-metadata-v0","version":"4.2.1"}`,
		"0000_20_b_00_cm.yml":    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: ns}\n",
		"0000_10_a_00_ns.yaml":   "# comment only\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\n",
		"0000_30_c_00_cm.json":   `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`,
		"README.md":              "not a manifest",
		"image-references":       "ignored",
		"0000_40_d_00_notes.txt": "apiVersion: broken",
		"zz_loose.YAML":          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: z, namespace: ns}\n",
	})
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := payload.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != "4.2.1" {
		t.Errorf("version = %q", p.Version)
	}
	var got []string
	for _, m := range p.Manifests {
		got = append(got, m.Ref()+"="+m.Obj.GetName())
	}
	want := []string{
		"0000_10_a_00_ns.yaml[1]=ns", "0000_10_a_00_ns.yaml[3]=a",
		"0000_20_b_00_cm.yml[0]=b", "0000_30_c_00_cm.json[0]=c", "zz_loose.YAML[0]=z",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("manifests:\n got %v\nwant %v", got, want)
	}
	if p.Hash == "" {
		t.Error("empty hash")
	}
}

func TestLoadErrorsNameFileAndDocument(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		wantErr []string
	}{
		{"bad yaml", map[string]string{"0000_10_a_x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [unclosed\n"},
			[]string{"0000_10_a_x.yaml", "document 1"}},
		{"missing kind", map[string]string{"0000_10_a_x.yaml": "apiVersion: v1\nmetadata: {name: a}\n"},
			[]string{"0000_10_a_x.yaml", "document 0"}},
		{"missing apiVersion", map[string]string{"b.json": `{"kind":"ConfigMap","metadata":{"name":"a"}}`},
			[]string{"b.json", "document 0", "apiVersion"}},
		{"scalar document", map[string]string{"c.yml": "---\njust a string\n"},
			[]string{"c.yml", "document 0"}},
		{"third document", map[string]string{"d.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n# empty\n--- # comment\nkind: ConfigMap\n"},
			[]string{"d.yaml", "document 2"}},
		{"bad metadata", map[string]string{"release-metadata": `{"version":"x.y"}`},
			[]string{"release-metadata"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := payload.Load(writeDir(t, tc.files))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
