package upgradegraph_test

import (
	"context"
	"slices"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/bundles/upgradegraph"
)

func TestUpgradeGraph(t *testing.T) {
	cfg, err := upgradegraph.Load(context.Background(), bundles.CatalogDir())
	if err != nil {
		t.Fatal(err)
	}
	graph, err := upgradegraph.Of(cfg, "widget-operator", "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"widget-operator.v0.1.0", "widget-operator.v0.2.0", "widget-operator.v0.3.0"}; !slices.Equal(graph, want) {
		t.Errorf("graph = %v, want %v", graph, want)
	}

	branched := &declcfg.DeclarativeConfig{Channels: []declcfg.Channel{{Package: "p", Name: "c", Entries: []declcfg.ChannelEntry{
		{Name: "p.v1"}, {Name: "p.v2", Replaces: "p.v1"}, {Name: "p.v3", Replaces: "p.v1"},
	}}}}
	if _, err := upgradegraph.Of(branched, "p", "c"); err == nil {
		t.Error("a branched replaces chain was accepted")
	}
	if _, err := upgradegraph.Of(cfg, "widget-operator", "stable"); err == nil {
		t.Error("a missing channel was accepted")
	}
}
