package toolchain

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Many processes assemble the envtest assets directory at once on a cold cache; each must succeed
// and the link must end up pointing at the binary.
func TestConcurrentSymlinkReplacement(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "kube-apiserver-real"), filepath.Join(dir, "kube-apiserver")
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() { errs <- replaceSymlink(target, link) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent replaceSymlink: %v", err)
		}
	}
	if got, err := os.Readlink(link); err != nil || got != target {
		t.Fatalf("link points at %q (%v), want %q", got, err, target)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".link-*")); len(left) > 0 {
		t.Fatalf("temporary links left behind: %v", left)
	}
}
