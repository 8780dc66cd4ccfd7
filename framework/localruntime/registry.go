package localruntime

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"k8s.io/client-go/rest"
)

// Entrypoint is the in-process equivalent of a container's main (see docs/CONTRACTS.md): it runs until
// ctx is cancelled. args are the container's args (Command[1:] first when Command is set); getenv
// resolves the container's env as the kubelet would.
type Entrypoint = func(ctx context.Context, cfg *rest.Config, args []string, getenv func(string) string) error

// Registry maps image references to entrypoints. It is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	entries map[string]Entrypoint
}

// NewRegistry returns a registry holding the given images; a later map wins for an image in several.
func NewRegistry(images ...map[string]Entrypoint) *Registry {
	r := &Registry{entries: map[string]Entrypoint{}}
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
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries[image] = ep
}

// Lookup returns the entrypoint for image.
func (r *Registry) Lookup(image string) (Entrypoint, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ep, ok := r.entries[image]
	return ep, ok
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
