package incluster

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// The manager images scripts/images.sh builds from the binaries of scripts/build-olmv1.sh, laid out as
// upstream's Dockerfile.catalogd and Dockerfile.operator-controller lay them out.
var (
	CatalogdImage           = catalogdRepo + ":" + olmv1.Version
	OperatorControllerImage = operatorControllerRepo + ":" + olmv1.Version
)

const (
	catalogdRepo           = "cleanup-e2e.local/catalogd"
	operatorControllerRepo = "cleanup-e2e.local/operator-controller"
)

// Names of what the rendered manifests hold (upstream's, after kustomize's name prefixes).
const (
	CatalogdDeployment           = "catalogd-controller-manager"
	OperatorControllerDeployment = "operator-controller-controller-manager"
	// catalogdCertSecret and operatorControllerCertSecret are the Secrets upstream's cert-manager
	// Certificates write (config/components/tls); registriesConf is config/components/registries-conf's.
	catalogdCertSecret           = "catalogd-service-cert-git-version"
	operatorControllerCertSecret = "olmv1-cert"
	registriesConf               = "e2e-registries-conf"
	configHashAnnotation         = "cleanup-e2e.io/config-hash"
)

// kustomization is upstream's config/overlays/e2e without cert-manager (components/tls/ca) and coverage
// (components/coverage), the images replaced by ours, and registries.conf also mounted into catalogd,
// which pulls the catalog from the same test registry (upstream's e2e registry serves TLS to it).
const kustomization = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- {{mod}}/config/base/catalogd
- {{mod}}/config/base/operator-controller
- {{mod}}/config/base/common
components:
- {{mod}}/config/components/tls/catalogd
- {{mod}}/config/components/tls/operator-controller
- {{mod}}/config/components/registries-conf
images:
- name: quay.io/operator-framework/catalogd
  newName: {{catalogd}}
  newTag: {{tag}}
- name: quay.io/operator-framework/operator-controller
  newName: {{operator-controller}}
  newTag: {{tag}}
patches:
- target: {kind: Deployment, name: ` + CatalogdDeployment + `}
  patch: |-
    - op: add
      path: /spec/template/spec/volumes/-
      value: {name: e2e-registries-conf, configMap: {name: ` + registriesConf + `}}
    - op: add
      path: /spec/template/spec/containers/0/volumeMounts/-
      value: {name: e2e-registries-conf, mountPath: /etc/containers}
`

// Render is OLM v1 as upstream's kustomize overlays install it (config/ of the module at olmv1.Version
// in the Go module cache), with what cert-manager would make replaced by Secrets generated here and a
// registries.conf marking insecure the registries the managers may pull from over plain HTTP. The
// objects come in an order that applies: namespace and CRDs first.
func Render(insecureRegistries []string) ([]*unstructured.Unstructured, error) {
	mod, err := olmv1.ModuleDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "olmv1-kustomize-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// kustomize takes a base's path relative to the kustomization, never absolute
	rel, err := filepath.Rel(dir, mod)
	if err != nil {
		return nil, err
	}
	k := strings.NewReplacer("{{mod}}", filepath.ToSlash(rel), "{{catalogd}}", catalogdRepo, "{{operator-controller}}", operatorControllerRepo,
		"{{tag}}", olmv1.Version).Replace(kustomization)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone // the bases are in the module cache, not under dir
	res, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize upstream's config/ (%s): %w", mod, err)
	}
	ca, err := olmv1.NewCA()
	if err != nil {
		return nil, err
	}
	secrets := map[string][]string{
		catalogdCertSecret: {"localhost", "catalogd-service." + olmv1.SystemNamespace + ".svc", "catalogd-service." + olmv1.SystemNamespace + ".svc.cluster.local"},
		operatorControllerCertSecret: {"operator-controller-service." + olmv1.SystemNamespace + ".svc",
			"operator-controller-service." + olmv1.SystemNamespace + ".svc.cluster.local"},
	}
	conf := registriesConfTOML(insecureRegistries)
	var objs, tail []*unstructured.Unstructured
	for _, r := range res.Resources() {
		// through JSON: kyaml's maps hold int, which unstructured cannot deep-copy
		j, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		switch {
		case strings.HasPrefix(u.GetAPIVersion(), "cert-manager.io/"):
			continue // replaced by the Secrets below
		case u.GetKind() == "Namespace" || u.GetKind() == "CustomResourceDefinition":
			objs = append(objs, u)
		case u.GetKind() == "ConfigMap" && u.GetName() == registriesConf:
			if err := unstructured.SetNestedField(u.Object, conf, "data", "registries.conf"); err != nil {
				return nil, err
			}
			tail = append(tail, u)
		case u.GetKind() == "MutatingWebhookConfiguration":
			if err := injectCABundle(u, ca.PEM()); err != nil {
				return nil, err
			}
			tail = append(tail, u)
		default:
			tail = append(tail, u)
		}
	}
	hash := sha256.New()
	hash.Write([]byte(conf))
	hash.Write(ca.PEM())
	for _, n := range []string{catalogdCertSecret, operatorControllerCertSecret} {
		cert, err := ca.Issue(n, secrets[n]...)
		if err != nil {
			return nil, err
		}
		objs = append(objs, tlsSecret(n, cert))
	}
	for _, u := range tail {
		if u.GetKind() == "Deployment" {
			// a new registries.conf or CA restarts the managers (a mounted ConfigMap changes only at the
			// kubelet's next sync, a Secret's files never for an env var; both re-read at start)
			if err := unstructured.SetNestedField(u.Object, fmt.Sprintf("%x", hash.Sum(nil))[:16], "spec", "template", "metadata", "annotations", configHashAnnotation); err != nil {
				return nil, err
			}
		}
	}
	return append(objs, tail...), nil
}

// registriesConfTOML marks each host insecure: containers/image then falls back from HTTPS to HTTP
// for it, which no flag or environment variable does.
func registriesConfTOML(hosts []string) string {
	var b strings.Builder
	for _, h := range hosts {
		fmt.Fprintf(&b, "[[registry]]\nlocation = %q\ninsecure = true\n\n", h)
	}
	return b.String()
}

// injectCABundle is what cert-manager's CA injector does for the annotation
// cert-manager.io/inject-ca-from-secret: the CA into every webhook's clientConfig.
func injectCABundle(u *unstructured.Unstructured, caPEM []byte) error {
	hooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
	if err != nil {
		return err
	}
	for i := range hooks {
		h, ok := hooks[i].(map[string]any)
		if !ok {
			return fmt.Errorf("%s %s: webhook %d is not an object", u.GetKind(), u.GetName(), i)
		}
		// caBundle is []byte in the API: unstructured carries it base64-encoded
		if err := unstructured.SetNestedField(h, encodeBase64(caPEM), "clientConfig", "caBundle"); err != nil {
			return err
		}
	}
	return unstructured.SetNestedSlice(u.Object, hooks, "webhooks")
}

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func tlsSecret(name string, c olmv1.ServingCert) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	data := map[string]any{"ca.crt": encodeBase64(c.CA), "tls.crt": encodeBase64(c.Cert), "tls.key": encodeBase64(c.Key)}
	u.Object = map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
		"metadata": map[string]any{"name": name, "namespace": olmv1.SystemNamespace}, "data": data}
	return u
}

// Manifests renders as YAML, for a failure message or a look by hand.
func Manifests(objs []*unstructured.Unstructured) (string, error) {
	var b strings.Builder
	for _, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return "", err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String(), nil
}
