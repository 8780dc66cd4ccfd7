package payload

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Payload is a loaded release payload.
type Payload struct {
	// Version is the release version from ReleaseMetadataFile ("" when the file is absent).
	Version string
	// Metadata is the parsed ReleaseMetadataFile.
	Metadata ReleaseMetadata
	// Manifests in filename order, documents in file order.
	Manifests []*Manifest
	// Hash identifies the payload content (files and metadata).
	Hash string
}

// Load reads a payload directory (not recursive): every .yaml, .yml and .json file in filename order,
// each possibly multi-document, plus the optional release-metadata file. Other files and directories
// are ignored. A document that fails to parse is an error naming the file and the document index.
func Load(dir string) (*Payload, error) {
	p, err := LoadFS(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("payload %s: %w", dir, err)
	}
	return p, nil
}

// LoadFS is Load for the root of an fs.FS.
func LoadFS(fsys fs.FS) (*Payload, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() || !(isManifestFile(e.Name()) || e.Name() == ReleaseMetadataFile) {
			continue
		}
		data, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		files[e.Name()] = data
	}
	return LoadFiles(files)
}

// LoadFiles builds a payload from file names and contents (e.g. the data of a ConfigMap), with the
// same rules as Load.
func LoadFiles(files map[string][]byte) (*Payload, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)

	p := &Payload{}
	h := sha256.New()
	for _, name := range names {
		data := files[name]
		switch {
		case name == ReleaseMetadataFile:
			md, err := parseReleaseMetadata(data)
			if err != nil {
				return nil, err
			}
			p.Metadata, p.Version = md, md.Version
		case isManifestFile(name):
			ms, err := parseFile(name, data)
			if err != nil {
				return nil, err
			}
			p.Manifests = append(p.Manifests, ms...)
		default:
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(data))
		h.Write(data)
	}
	p.Hash = hex.EncodeToString(h.Sum(nil))[:16]
	return p, nil
}

func isManifestFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return !strings.HasPrefix(name, ".")
	}
	return false
}

// parseFile splits a file into documents and decodes each non-empty one. Documents are separated by
// "---" lines; the index counts every document (empty or comment-only ones too), except a blank
// chunk before a leading separator.
func parseFile(name string, data []byte) ([]*Manifest, error) {
	var out []*Manifest
	for index, doc := range splitDocuments(data) {
		m, err := parseDocument(name, index, doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, index, err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out, nil
}

func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if isSeparator(line) {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
			cur.Reset()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	docs = append(docs, cur.Bytes())
	if len(docs) > 1 && len(bytes.TrimSpace(docs[0])) == 0 {
		docs = docs[1:]
	}
	return docs
}

func isSeparator(line string) bool {
	if !strings.HasPrefix(line, "---") {
		return false
	}
	rest := line[3:]
	return strings.TrimSpace(rest) == "" || rest[0] == ' ' || rest[0] == '\t'
}

func parseDocument(name string, index int, doc []byte) (*Manifest, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	js = bytes.TrimSpace(js)
	if len(js) == 0 || bytes.Equal(js, []byte("null")) {
		return nil, nil // empty document (only comments or separators)
	}
	if js[0] != '{' {
		return nil, fmt.Errorf("not an object")
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return nil, err
	}
	if u.GetAPIVersion() == "" {
		return nil, fmt.Errorf("apiVersion is required")
	}
	if u.GetKind() == "" {
		return nil, fmt.Errorf("kind is required")
	}
	if u.IsList() {
		return nil, fmt.Errorf("lists are not supported (kind %s)", u.GetKind())
	}
	return &Manifest{Filename: name, Index: index, Raw: js, Obj: u}, nil
}
