package srcdir

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestOf(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	wd, err := os.Getwd() // go test runs the binary in this package's directory
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(filepath.Dir(wd))
	t.Setenv("CLEANUP_E2E_ROOT", "")

	if got := Of("/abs/checkout/bundles/bundles.go"); got != "/abs/checkout/bundles" {
		t.Errorf("an absolute path is used as it is: got %q", got)
	}
	if got := Of(Module + "/bundles/bundles.go"); got != filepath.Join(root, "bundles") {
		t.Errorf("a trimmed path is found in the checkout holding the working directory: got %q, want %q", got, filepath.Join(root, "bundles"))
	}
	if got := Of(self); got != wd {
		t.Errorf("this file, however this test binary was built (%q): got %q, want %q", self, got, wd)
	}

	t.Run("CLEANUP_E2E_ROOT first", func(t *testing.T) {
		t.Setenv("CLEANUP_E2E_ROOT", "/elsewhere")
		if got := Of(Module + "/fixtures/crds/crds.go"); got != "/elsewhere/fixtures/crds" {
			t.Errorf("got %q", got)
		}
	})

	t.Run("a version from the module cache", func(t *testing.T) {
		cache := t.TempDir()
		want := filepath.Join(cache, "github.com", "cleanup-e2e", "cleanup-e2e@v0.3.0", "bundles")
		if err := os.MkdirAll(want, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("GOMODCACHE", cache)
		t.Chdir(t.TempDir()) // outside any checkout
		if got := Of(Module + "@v0.3.0/bundles/bundles.go"); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
		if got := Of(Module + "@v0.4.0/bundles/bundles.go"); got != filepath.Join(Module+"@v0.4.0", "bundles") {
			t.Errorf("a version not in the cache is returned as it is, so that opening it names it: got %q", got)
		}
	})
}
