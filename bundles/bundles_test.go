package bundles_test

import (
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
)

func TestDirTakesVersionsWithAndWithoutV(t *testing.T) {
	if bundles.Dir("widget-operator", "0.2.0") != bundles.Dir("widget-operator", "v0.2.0") {
		t.Error("Dir does not accept versions with and without a v alike")
	}
	if _, err := bundles.Load(bundles.Dir("widget-operator", "v0.1.0")); err != nil {
		t.Fatalf("every fixture bundle must load: %v", err)
	}
}
