package olmv1

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cleanup-e2e/cleanup-e2e/framework/bundle"
)

// Endpoint is an OCI registry as the two sides see it: the test pushes to Push, the OLM v1 managers
// pull from Pull (the same host:port on envtest, where both run on this machine; on kind the managers
// reach the host through the cluster's network).
type Endpoint struct {
	Push, Pull string
}

// PushPackage pushes each bundle directory (registry+v1, one package, oldest version first) as
// <Pull>/<repo>/bundle:v<version> and a file-based catalog of that package as <Pull>/<repo>/catalog:latest,
// which it returns. The channel is the bundles' default channel; each bundle replaces the one before it
// (its CSV's spec.replaces when that names a bundle of the list). The properties are opm's for the same
// bundles (olm.package, olm.gvk, olm.gvk.required) minus those operator-controller does not read
// (olm.csv.metadata, olm.bundle.object); dependencies.yaml is not read (no olm.package.required).
func PushPackage(ctx context.Context, reg Endpoint, repo string, bundleDirs ...string) (string, error) {
	if len(bundleDirs) == 0 {
		return "", fmt.Errorf("PushPackage %s: no bundle directory", repo)
	}
	var bundles []*bundle.Bundle
	for _, dir := range bundleDirs {
		b, err := bundle.Load(dir)
		if err != nil {
			return "", err
		}
		if len(bundles) > 0 && b.Package() != bundles[0].Package() {
			return "", fmt.Errorf("PushPackage %s: bundle %s is of package %q, %s of %q: one package per catalog", repo, dir, b.Package(), bundleDirs[0], bundles[0].Package())
		}
		bundles = append(bundles, b)
	}
	refs := make([]string, len(bundles))
	for i, b := range bundles {
		tag := "v" + strings.TrimPrefix(b.CSV.Spec.Version.String(), "v")
		refs[i] = fmt.Sprintf("%s/%s/bundle:%s", reg.Pull, repo, tag)
		if err := pushBundle(ctx, b.Dir, fmt.Sprintf("%s/%s/bundle:%s", reg.Push, repo, tag)); err != nil {
			return "", err
		}
	}
	fbc, err := renderCatalog(bundles, refs)
	if err != nil {
		return "", err
	}
	files := map[string][]byte{"configs/" + bundles[0].Package() + "/catalog.json": fbc}
	if err := push(ctx, fmt.Sprintf("%s/%s/catalog:latest", reg.Push, repo), files, map[string]string{catalogConfigsLabel: "/configs"}); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/%s/catalog:latest", reg.Pull, repo), nil
}

// renderCatalog is the package's olm.package, olm.channel and olm.bundle blobs as a JSON stream.
func renderCatalog(bundles []*bundle.Bundle, refs []string) ([]byte, error) {
	pkg := bundles[0].Package()
	channel := bundles[0].DefaultChannel()
	if channel == "" {
		if chs := bundles[0].Channels(); len(chs) > 0 {
			channel = chs[0]
		} else {
			return nil, fmt.Errorf("bundle %s names no channel in metadata/annotations.yaml", bundles[0].Dir)
		}
	}
	blobs := []any{map[string]any{"schema": "olm.package", "name": pkg, "defaultChannel": channel}}
	var entries []map[string]any
	var names []string
	for i, b := range bundles {
		e := map[string]any{"name": b.CSV.Name}
		switch {
		case b.CSV.Spec.Replaces != "" && slices.Contains(names, b.CSV.Spec.Replaces):
			e["replaces"] = b.CSV.Spec.Replaces
		case i > 0:
			e["replaces"] = names[i-1]
		}
		entries = append(entries, e)
		names = append(names, b.CSV.Name)
	}
	blobs = append(blobs, map[string]any{"schema": "olm.channel", "name": channel, "package": pkg, "entries": entries})
	for i, b := range bundles {
		props := []any{map[string]any{"type": "olm.package", "value": map[string]any{"packageName": pkg, "version": b.CSV.Spec.Version.String()}}}
		for _, crd := range b.CRDs {
			for _, v := range crd.Spec.Versions {
				props = append(props, map[string]any{"type": "olm.gvk", "value": map[string]any{
					"group": crd.Spec.Group, "version": v.Name, "kind": crd.Spec.Names.Kind}})
			}
		}
		// Required CRDs as opm renders them: OLM v1 v1.2.0 refuses such a bundle (it resolves no
		// dependencies), and a catalog made here must not let through what a real one would not.
		for _, req := range b.CSV.Spec.CustomResourceDefinitions.Required {
			_, group, _ := strings.Cut(req.Name, ".")
			props = append(props, map[string]any{"type": "olm.gvk.required", "value": map[string]any{
				"group": group, "version": req.Version, "kind": req.Kind}})
		}
		blobs = append(blobs, map[string]any{"schema": "olm.bundle", "name": b.CSV.Name, "package": pkg, "image": refs[i], "properties": props})
	}
	var out []byte
	for _, blob := range blobs {
		data, err := json.Marshal(blob)
		if err != nil {
			return nil, err
		}
		out = append(append(out, data...), '\n')
	}
	return out, nil
}
