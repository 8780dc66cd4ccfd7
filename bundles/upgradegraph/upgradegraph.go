// Package upgradegraph reads a file-based catalog (the fixtures' is bundles.CatalogDir()) and follows
// the replaces chain of one of its channels. It is apart from package bundles because it needs
// operator-registry, which the spec library (reading bundles only) must not link into an operator
// repo's test binary.
package upgradegraph

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// Load parses the file-based catalog in dir (bundles.CatalogDir() for the fixtures) with
// operator-registry's declcfg, the library `opm` uses.
func Load(ctx context.Context, dir string) (*declcfg.DeclarativeConfig, error) {
	cfg, err := declcfg.LoadFS(ctx, os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", dir, err)
	}
	return cfg, nil
}

// Of follows the replaces chain of one channel of a catalog from its tail to its head and
// returns the bundle names in upgrade order (oldest first).
func Of(cfg *declcfg.DeclarativeConfig, pkg, channel string) ([]string, error) {
	for _, ch := range cfg.Channels {
		if ch.Package != pkg || ch.Name != channel {
			continue
		}
		successor := map[string]string{} // replaced -> replacing
		replacesOne := map[string]bool{}
		for _, e := range ch.Entries {
			if e.Replaces != "" {
				if prev, dup := successor[e.Replaces]; dup {
					return nil, fmt.Errorf("channel %s/%s: %s is replaced by both %s and %s", pkg, channel, e.Replaces, prev, e.Name)
				}
				successor[e.Replaces] = e.Name
				replacesOne[e.Name] = true
			}
		}
		var tails []string
		for _, e := range ch.Entries {
			if !replacesOne[e.Name] {
				tails = append(tails, e.Name)
			}
		}
		sort.Strings(tails)
		if len(tails) != 1 {
			return nil, fmt.Errorf("channel %s/%s: want one entry that replaces nothing, found %v", pkg, channel, tails)
		}
		graph := []string{tails[0]}
		for next, ok := successor[tails[0]]; ok; next, ok = successor[next] {
			graph = append(graph, next)
			if len(graph) > len(ch.Entries) {
				return nil, fmt.Errorf("channel %s/%s: replaces chain has a cycle", pkg, channel)
			}
		}
		if len(graph) != len(ch.Entries) {
			return nil, fmt.Errorf("channel %s/%s: entries %d, but the replaces chain has only %v", pkg, channel, len(ch.Entries), graph)
		}
		return graph, nil
	}
	return nil, fmt.Errorf("catalog has no channel %s in package %s", channel, pkg)
}
