package testenv

import (
	"os"
	"testing"
)

func TestWhatTheProviderCanDoIsKnownBeforeItStarts(t *testing.T) {
	t.Setenv("CLEANUP_E2E_PROVIDER", "")
	_ = os.Unsetenv("CLEANUP_E2E_PROVIDER")
	t.Setenv("PROVIDER", "")
	_ = os.Unsetenv("PROVIDER")
	for _, c := range []struct {
		in                           Config
		name                         string
		shared, runsPods, loadsImage bool
	}{
		{Config{}, "envtest", false, false, false},
		{Config{Provider: "kind"}, "kind", true, true, true},
		{Config{Provider: "existing"}, "existing", true, true, false},
	} {
		if got := c.in.ProviderName(); got != c.name {
			t.Errorf("%+v: provider %q, want %q", c.in, got, c.name)
		}
		if c.in.Shared() != c.shared || c.in.RunsPods() != c.runsPods || c.in.LoadsImages() != c.loadsImage {
			t.Errorf("%s: shared %v runs pods %v loads images %v", c.name, c.in.Shared(), c.in.RunsPods(), c.in.LoadsImages())
		}
	}
	t.Setenv("CLEANUP_E2E_PROVIDER", "kind")
	if got := (Config{}).ProviderName(); got != "kind" {
		t.Errorf("with CLEANUP_E2E_PROVIDER=kind: %q", got)
	}
	if got := (Config{Provider: "existing"}).ProviderName(); got != "existing" {
		t.Errorf("the input's provider must win over the environment: %q", got)
	}
}
