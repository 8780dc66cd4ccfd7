package olmv1

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// Version is the operator-controller release this package runs; scripts/versions.env's OLMV1_VERSION
// holds the same value for scripts/build-olmv1.sh (a test keeps the two in step).
const Version = "v1.2.0"

// Module is the Go module both managers and the CRDs come from.
const Module = "github.com/operator-framework/operator-controller"

// SystemNamespace is the namespace both managers are told they live in (upstream's default install).
const SystemNamespace = "olmv1-system"

// The binaries, as scripts/build-olmv1.sh caches them.
var (
	OperatorController = toolchain.Binary{Name: "operator-controller", Version: Version, Dir: "olmv1-" + Version, Script: "scripts/build-olmv1.sh"}
	Catalogd           = toolchain.Binary{Name: "catalogd", Version: Version, Dir: "olmv1-" + Version, Script: "scripts/build-olmv1.sh"}
)

// The OLM v1 kinds (group olm.operatorframework.io, version v1).
var (
	ClusterCatalogGVK   = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterCatalog"}
	ClusterExtensionGVK = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterExtension"}
)

// ModuleDir is the operator-controller module at Version in the Go module cache ($GOMODCACHE, else
// `go env GOMODCACHE`). scripts/build-olmv1.sh downloads it.
func ModuleDir() (string, error) {
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			return "", fmt.Errorf("go env GOMODCACHE: %w", err)
		}
		cache = strings.TrimSpace(string(out))
	}
	dir := filepath.Join(cache, Module+"@"+Version)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("%s@%s is not in the Go module cache (%s): run scripts/build-olmv1.sh (or make tools)", Module, Version, dir)
	}
	return dir, nil
}

// CRDPaths are the files of the ClusterCatalog and ClusterExtension CRDs in the module
// (config/base/*/crd/bases), as upstream's kustomize bases install them.
func CRDPaths() ([]string, error) {
	dir, err := ModuleDir()
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "config", "base", "*", "crd", "bases", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(paths) != 2 {
		return nil, fmt.Errorf("%s: want the ClusterCatalog and ClusterExtension CRDs under config/base/*/crd/bases, found %v", dir, paths)
	}
	return paths, nil
}
