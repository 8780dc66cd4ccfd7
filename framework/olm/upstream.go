package olm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/manifests"
)

// On a cluster with nodes (kind, or a bare cluster without OLM) OLM is installed the way a user would
// have it: from OLM's own published quickstart manifests (deploy/upstream/quickstart in the
// operator-lifecycle-manager module at the pinned version), read from the Go module cache at run time
// and rewritten to use locally built images. Nothing of them is copied into this repository.

// Images are the locally built images substituted for upstream's.
type Images struct {
	// OLM holds olm, catalog, package-server, cpb and copy-content, like upstream's olm image.
	OLM string
	// OPM serves catalogs and unpacks bundles (configmap server image and bundle unpacker).
	OPM string
}

// DefaultImages are the tags scripts/kind builds.
var DefaultImages = Images{OLM: "cleanup-e2e.local/olm:" + toolchain.OLMVersion, OPM: "cleanup-e2e.local/opm:v1.73.0"}

const upstreamImagePrefix = "quay.io/operator-framework/"

// UpstreamManifestDir locates deploy/upstream/quickstart of the pinned OLM module in the module cache.
func UpstreamManifestDir() (string, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com", "operator-framework",
		"operator-lifecycle-manager@"+toolchain.OLMVersion, "deploy", "upstream", "quickstart")
	if _, err := os.Stat(filepath.Join(dir, "olm.yaml")); err != nil {
		return "", fmt.Errorf("OLM %s install manifests not in the module cache (%s): run scripts/build-olm.sh, which downloads the module", toolchain.OLMVersion, dir)
	}
	return dir, nil
}

// UpstreamManifests returns OLM's quickstart objects (CRDs first) with images rewritten to imgs. The
// community catalog (operatorhub.io, unreachable and unwanted here) is left out. CRDs that the
// quickstart lacks but OLM watches (v0.46.0's quickstart has no OLMConfig CRD; its Helm chart does) are
// added from operator-framework/api.
func UpstreamManifests(dir string, imgs Images) ([]*unstructured.Unstructured, error) {
	out, err := missingAPICRDs(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"crds.yaml", "olm.yaml"} {
		objs, err := decodeFile(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.GetKind() == "CatalogSource" {
				continue
			}
			rewriteImages(o.Object, imgs)
			if err := fixSingleDashFlags(o); err != nil {
				return nil, err
			}
			if err := setOPMImage(o, imgs.OPM); err != nil {
				return nil, err
			}
			out = append(out, o)
		}
	}
	return out, nil
}

func decodeFile(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return manifests.Decode(data, path)
}

// rewriteImages replaces, anywhere in the object, upstream's olm image by imgs.OLM and the configmap
// registry image by imgs.OPM (in fields and in "-flag=image" arguments), and makes pulls never happen.
func rewriteImages(v any, imgs Images) {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if s, ok := val.(string); ok {
				t[k] = rewriteString(s, imgs)
				if k == "imagePullPolicy" {
					t[k] = "IfNotPresent"
				}
				continue
			}
			rewriteImages(val, imgs)
		}
	case []any:
		for i, val := range t {
			if s, ok := val.(string); ok {
				t[i] = rewriteString(s, imgs)
				continue
			}
			rewriteImages(val, imgs)
		}
	}
}

func rewriteString(s string, imgs Images) string {
	prefix, value, hasFlag := strings.Cut(s, "=")
	if !hasFlag {
		prefix, value = "", s
	}
	value = strings.TrimSpace(value)
	if !strings.HasPrefix(value, upstreamImagePrefix) {
		return s
	}
	repl := imgs.OLM
	if strings.Contains(value, "registry") {
		repl = imgs.OPM
	}
	if hasFlag {
		return prefix + "=" + repl
	}
	return repl
}

// setOPMImage adds -opmImage to the catalog operator's arguments: the quickstart does not set it, so
// bundle unpack Jobs would run quay.io/operator-framework/opm:latest (the flag's default), which cannot
// be pulled here.
func setOPMImage(o *unstructured.Unstructured, opm string) error {
	if o.GetKind() != "Deployment" || o.GetName() != "catalog-operator" {
		return nil
	}
	containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if err != nil || len(containers) == 0 {
		return fmt.Errorf("catalog-operator Deployment has no containers (%v)", err)
	}
	ctr := containers[0].(map[string]any)
	args, _ := ctr["args"].([]any)
	for i, a := range args {
		if s, _ := a.(string); strings.HasPrefix(strings.TrimLeft(s, "-"), "opmImage") {
			args = append(args[:i], args[i+1:]...)
			break
		}
	}
	ctr["args"] = append(args, "--opmImage="+opm)
	return unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
}

// singleDashFlag is a long flag written with one dash, e.g. "-namespace" or "-util-image=x".
var singleDashFlag = regexp.MustCompile(`^-[A-Za-z][A-Za-z0-9-]+(=.*)?$`)

// fixSingleDashFlags rewrites "-namespace" style arguments of OLM's Deployments to "--namespace".
// v0.46.0's quickstart olm.yaml (unlike its Helm chart) passes the catalog operator `-namespace`,
// `-configmapServerImage=...` and `-util-image`, which its cobra/pflag command line rejects ("unknown
// shorthand flag: 'n' in -namespace"): the catalog operator crash-loops as published.
func fixSingleDashFlags(o *unstructured.Unstructured) error {
	if o.GetKind() != "Deployment" {
		return nil
	}
	containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return err
	}
	for _, c := range containers {
		ctr, _ := c.(map[string]any)
		args, _ := ctr["args"].([]any)
		for i, a := range args {
			if s, ok := a.(string); ok && singleDashFlag.MatchString(s) {
				args[i] = "-" + s
			}
		}
	}
	return unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
}

// InstallUpstream applies OLM's quickstart manifests with the given images and waits until OLM
// reconciles (olm-operator and catalog-operator available, packageserver CSV Succeeded).
func InstallUpstream(ctx context.Context, c client.Client, imgs Images, timeout time.Duration) error {
	dir, err := UpstreamManifestDir()
	if err != nil {
		return err
	}
	objs, err := UpstreamManifests(dir, imgs)
	if err != nil {
		return err
	}
	var crds, rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		} else {
			rest = append(rest, o)
		}
	}
	if err := kube.Apply(ctx, c, crds...); err != nil {
		return err
	}
	// The rest includes objects of these kinds (OperatorGroups, the packageserver CSV).
	names := make([]string, len(crds))
	for i, crd := range crds {
		names[i] = crd.GetName()
	}
	if err := kube.WaitCRDsUsable(ctx, c, names...); err != nil {
		return err
	}
	if err := kube.Apply(ctx, c, rest...); err != nil {
		return err
	}
	for _, d := range []string{"olm-operator", "catalog-operator"} {
		if err := kube.WaitDeploymentAvailable(ctx, c, types.NamespacedName{Namespace: "olm", Name: d}, timeout); err != nil {
			return err
		}
	}
	return WaitReconciling(ctx, c, timeout)
}

func missingAPICRDs(dir string) ([]*unstructured.Unstructured, error) {
	quick, err := decodeFile(filepath.Join(dir, "crds.yaml"))
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, o := range quick {
		have[o.GetName()] = true
	}
	api, err := CRDs()
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, crd := range api {
		if have[crd.Name] {
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		unstructured.RemoveNestedField(u.Object, "status")
		out = append(out, u)
	}
	return out, nil
}

// upstreamCRDs decodes the CRDs of the quickstart (for tests comparing them with operator-framework/api's).
func upstreamCRDs(objs []*unstructured.Unstructured) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
			return nil, err
		}
		out = append(out, crd)
	}
	return out, nil
}
