package localruntime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// Entrypoint is the in-process equivalent of a container's main (see docs/CONTRACTS.md): it runs until
// ctx is cancelled. args are the container's args (Command[1:] first when Command is set); getenv
// resolves the container's env as the kubelet would.
type Entrypoint = func(ctx context.Context, cfg *rest.Config, args []string, getenv func(string) string) error

// Binary is an operator's own program, run unchanged as a child process (see child.go): either Path,
// an executable already built, or Package, a Go main package built with the go tool in Dir (relative
// to the test's working directory) before the cluster starts.
type Binary struct {
	Path    string
	Package string
	Dir     string
}

// program is what an image runs: an in-process entrypoint or a binary.
type program struct {
	entrypoint Entrypoint
	binary     *Binary
}

// Registry maps image references to what the runtime runs for them. It is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	entries map[string]program
}

// NewRegistry returns a registry holding the given images; a later map wins for an image in several.
func NewRegistry(images ...map[string]Entrypoint) *Registry {
	r := &Registry{entries: map[string]program{}}
	for _, m := range images {
		for image, ep := range m {
			r.Register(image, ep)
		}
	}
	return r
}

// Register maps image to ep, replacing an earlier registration.
func (r *Registry) Register(image string, ep Entrypoint) {
	if ep == nil {
		panic(fmt.Sprintf("localruntime: nil entrypoint for image %q", image))
	}
	r.set(image, program{entrypoint: ep})
}

// RegisterBinary maps image to an operator's own program, replacing an earlier registration. It
// returns r, so a registry can be written in one expression.
func (r *Registry) RegisterBinary(image string, b Binary) *Registry {
	if (b.Path == "") == (b.Package == "") {
		panic(fmt.Sprintf("localruntime: the Binary for image %q needs exactly one of Path and Package", image))
	}
	r.set(image, program{binary: &b})
	return r
}

func (r *Registry) set(image string, p program) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries[image] = p
}

// Lookup returns the in-process entrypoint for image (false for an image not registered or run as a
// binary).
func (r *Registry) Lookup(image string) (Entrypoint, bool) {
	p, ok := r.lookup(image)
	return p.entrypoint, ok && p.entrypoint != nil
}

// Registered reports whether image is registered, either way.
func (r *Registry) Registered(image string) bool {
	_, ok := r.lookup(image)
	return ok
}

func (r *Registry) lookup(image string) (program, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.entries[image]
	return p, ok
}

// Images lists the registered images, sorted.
func (r *Registry) Images() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.entries))
	for k := range r.entries {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// BuildBinaries builds every binary registered by package into outDir, so a compile error fails the
// cluster's start naming the image and package rather than a crash-looping Deployment later. It
// builds with `go run -exec cp PACKAGE OUT`: the go command keeps what go run links in its build cache
// (Go 1.24 and later), so an operator that did not change is copied from there instead of linked again
// on every run (a controller-runtime operator's link is ≈ 3.5 s of CPU), and -exec hands the
// executable to cp instead of running it. Like every go run executable it has no DWARF (stack traces
// are unchanged; a debugger would want a go build of its own).
func (r *Registry) BuildBinaries(ctx context.Context, outDir string, log logr.Logger) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, image := range sortedKeys(r.entries) {
		b := r.entries[image].binary
		if b == nil || b.Package == "" || b.Path != "" {
			continue
		}
		out := filepath.Join(outDir, strings.NewReplacer("/", "_", ":", "_", "@", "_").Replace(image))
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return err
		}
		if !filepath.IsAbs(out) { // cp runs in b.Dir
			abs, err := filepath.Abs(out)
			if err != nil {
				return err
			}
			out = abs
		}
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", "run", "-exec", "cp", b.Package, out)
		cmd.Dir = b.Dir
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build the binary for image %s (go run -exec cp %s %s in %q): %w\n%s", image, b.Package, out, b.Dir, err, msg)
		}
		log.Info("built operator binary", "image", image, "package", b.Package, "took", time.Since(start).Round(time.Millisecond).String())
		r.entries[image] = program{binary: &Binary{Path: out, Package: b.Package, Dir: b.Dir}}
	}
	return nil
}

func sortedKeys(m map[string]program) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
