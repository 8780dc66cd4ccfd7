// Package srcdir finds this module's source directories at run time, for the packages that read files
// kept beside their source (bundles, fixtures/crds, framework/toolchain). They ask runtime.Caller for
// their own file, which is an absolute path in a plain build but "github.com/cleanup-e2e/cleanup-e2e/…"
// (or "…@version/…" from the module cache) in a -trimpath build — and the scripts build every test
// binary with -trimpath, in the one compile mode they share with the toolchain and the images
// (scripts/lib.sh). Of maps such a path back to a directory on disk.
package srcdir

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

// Module is this module's path.
const Module = "github.com/cleanup-e2e/cleanup-e2e"

// Of is the directory of file, a path runtime.Caller returned for a source file of this module. An
// absolute path is used as it is. A trimmed one is found, in order: under $CLEANUP_E2E_ROOT; under
// the checkout holding the working directory (found by walking up to this module's go.mod: a test
// binary runs in its package's directory); in the module cache, when the path names a version. If
// none is found, the trimmed directory is returned as it is: opening it then fails naming it.
func Of(file string) string {
	dir := filepath.Dir(filepath.FromSlash(file))
	if filepath.IsAbs(file) || !strings.HasPrefix(file, Module) {
		return dir
	}
	rest := strings.TrimPrefix(file, Module) // "/bundles/bundles.go" or "@v1.2.3/bundles/bundles.go"
	version := ""
	if strings.HasPrefix(rest, "@") {
		version, rest, _ = strings.Cut(rest[1:], "/")
		rest = "/" + rest
	}
	rel := filepath.Dir(filepath.FromSlash(strings.TrimPrefix(rest, "/")))
	if root := envvar.Root.Get(); root != "" {
		return filepath.Join(root, rel)
	}
	if root, ok := checkout(); ok {
		return filepath.Join(root, rel)
	}
	if version != "" {
		if root, ok := moduleCache(version); ok {
			return filepath.Join(root, rel)
		}
	}
	return dir
}

// checkout walks up from the working directory to the directory whose go.mod declares Module.
func checkout() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modfile.ModulePath(data) == Module {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// moduleCache is Module at version in the module cache ($GOMODCACHE, else $GOPATH/pkg/mod, else
// ~/go/pkg/mod), if it is there.
func moduleCache(version string) (string, bool) {
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		gopath := os.Getenv("GOPATH")
		if gopath == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", false
			}
			gopath = filepath.Join(home, "go")
		}
		cache = filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
	}
	escaped, err := module.EscapePath(Module)
	if err != nil {
		return "", false
	}
	dir := filepath.Join(cache, filepath.FromSlash(escaped)+"@"+version)
	if _, err := os.Stat(dir); err != nil {
		return "", false
	}
	return dir, true
}
