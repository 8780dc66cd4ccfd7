package specs

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// WebhookCertDir is where controller-runtime's webhook server reads its certificate by default, and
// where OLM mounts the one it makes for a CSV's webhooks.
const WebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"

// webhookCertFlags are the flags of kubebuilder go/v4's main that point its webhook server at a
// certificate (cert-manager's or OLM's).
var webhookCertFlags = []string{"--webhook-cert-path", "--webhook-cert-name", "--webhook-cert-key"}

// WithoutWebhooks writes a copy of the registry-v1 bundle in bundleDir whose operator serves no
// webhooks, and returns its directory: for the envtest provider, which cannot call webhooks (the
// install fails up front naming them), so that a suite there checks everything else. The CSV loses
// spec.webhookdefinitions; each container of its Deployments loses the webhook certificate's flags
// (--webhook-cert-path, -name, -key) and the volume mounted at WebhookCertDir, and gets
// ENABLE_WEBHOOKS=false — kubebuilder's main then registers no webhook, and controller-runtime starts
// no webhook server (it starts one only when a webhook is registered), so the operator needs no
// certificate. An operator that does not read ENABLE_WEBHOOKS still registers its webhooks and fails
// at start without a certificate: the install names that crash.
//
// The copy is made once per bundle content, in the user's cache directory (the temp dir without one).
func WithoutWebhooks(bundleDir string) (string, error) {
	return bundleVariant(bundleDir, "bundles-without-webhooks", withoutWebhooksInManifest)
}

// withoutWebhooksInManifest rewrites the CSV documents of a manifest file without their webhooks.
func withoutWebhooksInManifest(data []byte) ([]byte, int, error) {
	return rewriteCSVs(data, dropWebhooks)
}

// bundleVariant writes a copy of the bundle in bundleDir with each file of manifests/ rewritten by
// rewrite (which says how many CSVs it found), once per bundle content, in the user's cache directory
// under name (the temp dir without one), and returns its directory.
func bundleVariant(bundleDir, name string, rewrite func(data []byte) ([]byte, int, error)) (string, error) {
	key, err := treeHash(bundleDir)
	if err != nil {
		return "", fmt.Errorf("bundle %s: %w", bundleDir, err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	root := filepath.Join(cache, "cleanup-e2e", name)
	out := filepath.Join(root, filepath.Base(filepath.Clean(bundleDir))+"-"+key)
	if _, err := os.Stat(filepath.Join(out, "metadata")); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	// Made aside and renamed into place: parallel processes build their spec trees at once.
	tmp, err := os.MkdirTemp(root, ".making-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	csvs := 0
	err = filepath.WalkDir(bundleDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(bundleDir, path)
		dst := filepath.Join(tmp, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if filepath.Dir(rel) == "manifests" {
			n := 0
			if data, n, err = rewrite(data); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			csvs += n
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("bundle %s: %w", bundleDir, err)
	}
	if csvs != 1 {
		return "", fmt.Errorf("bundle %s: %d ClusterServiceVersions in manifests/, want 1", bundleDir, csvs)
	}
	if err := os.Rename(tmp, out); err != nil {
		if _, statErr := os.Stat(filepath.Join(out, "metadata")); statErr == nil {
			return out, nil // another process made it meanwhile
		}
		return "", err
	}
	return out, nil
}

// MustWithoutWebhooks is WithoutWebhooks for a spec input built at package level; it panics with the
// error.
func MustWithoutWebhooks(bundleDir string) string {
	dir, err := WithoutWebhooks(bundleDir)
	if err != nil {
		panic(err)
	}
	return dir
}

// rewriteCSVs rewrites the CSV documents of a manifest file with edit (the others are kept as they
// are) and says how many it found.
func rewriteCSVs(data []byte, edit func(csv map[string]any) error) ([]byte, int, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	csvs := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return nil, 0, err
		}
		if obj.GetKind() != "ClusterServiceVersion" {
			docs = append(docs, doc)
			continue
		}
		csvs++
		if err := edit(obj.Object); err != nil {
			return nil, 0, fmt.Errorf("ClusterServiceVersion %s: %w", obj.GetName(), err)
		}
		out, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, 0, err
		}
		docs = append(docs, out)
	}
	if csvs == 0 {
		return data, 0, nil
	}
	var b bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(bytes.TrimLeft(d, "-\n"))
	}
	return b.Bytes(), csvs, nil
}

// dropWebhooks edits a CSV (as unstructured content) as WithoutWebhooks says.
func dropWebhooks(csv map[string]any) error {
	unstructured.RemoveNestedField(csv, "spec", "webhookdefinitions")
	deployments, _, err := unstructured.NestedSlice(csv, "spec", "install", "spec", "deployments")
	if err != nil {
		return err
	}
	for i, raw := range deployments {
		dep, ok := raw.(map[string]any)
		if !ok {
			continue
		}
		pod, _, _ := unstructured.NestedMap(dep, "spec", "template", "spec")
		if pod == nil {
			continue
		}
		dropped := map[string]bool{}
		kept := map[string]bool{}
		containers, _, _ := unstructured.NestedSlice(pod, "containers")
		for j, rc := range containers {
			ctr, ok := rc.(map[string]any)
			if !ok {
				continue
			}
			ctr["args"] = withoutCertFlags(ctr["args"])
			if ctr["args"] == nil {
				delete(ctr, "args")
			}
			var mounts []any
			list, _, _ := unstructured.NestedSlice(ctr, "volumeMounts")
			for _, rm := range list {
				m, _ := rm.(map[string]any)
				name, _ := m["name"].(string)
				path, _ := m["mountPath"].(string)
				if path == WebhookCertDir || strings.HasPrefix(path, WebhookCertDir+"/") {
					dropped[name] = true
					continue
				}
				kept[name] = true
				mounts = append(mounts, rm)
			}
			if len(mounts) > 0 {
				ctr["volumeMounts"] = mounts
			} else {
				delete(ctr, "volumeMounts")
			}
			ctr["env"] = withEnv(ctr["env"], "ENABLE_WEBHOOKS", "false")
			containers[j] = ctr
		}
		pod["containers"] = containers
		var volumes []any
		list, _, _ := unstructured.NestedSlice(pod, "volumes")
		for _, rv := range list {
			v, _ := rv.(map[string]any)
			name, _ := v["name"].(string)
			if dropped[name] && !kept[name] {
				continue
			}
			volumes = append(volumes, rv)
		}
		if len(volumes) > 0 {
			pod["volumes"] = volumes
		} else {
			delete(pod, "volumes")
		}
		if err := unstructured.SetNestedMap(dep, pod, "spec", "template", "spec"); err != nil {
			return err
		}
		deployments[i] = dep
	}
	if deployments == nil {
		return nil
	}
	return unstructured.SetNestedSlice(csv, deployments, "spec", "install", "spec", "deployments")
}

// withoutCertFlags drops the webhook certificate's flags ("--flag=value", or "--flag" then its value).
func withoutCertFlags(raw any) any {
	args, ok := raw.([]any)
	if !ok {
		return raw
	}
	var out []any
	for i := 0; i < len(args); i++ {
		a, _ := args[i].(string)
		drop := false
		for _, f := range webhookCertFlags {
			switch {
			case strings.HasPrefix(a, f+"="):
				drop = true
			case a == f:
				drop = true
				i++ // its value
			}
		}
		if !drop {
			out = append(out, args[i])
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// withEnv sets name to value in a container's env list.
func withEnv(raw any, name, value string) any {
	env, _ := raw.([]any)
	for i, re := range env {
		if e, ok := re.(map[string]any); ok && e["name"] == name {
			env[i] = map[string]any{"name": name, "value": value}
			return env
		}
	}
	return append(env, map[string]any{"name": name, "value": value})
}

// treeHash is a short hash of every file's path and content under dir.
func treeHash(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(data))
		h.Write(data)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:16], err
}
