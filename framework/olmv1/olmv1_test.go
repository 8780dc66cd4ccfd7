package olmv1

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// scripts/build-olmv1.sh builds what this package runs.
func TestVersionMatchesScripts(t *testing.T) {
	f, err := os.Open(filepath.Join(toolchain.RepoRoot(), "scripts", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && k == "OLMV1_VERSION" {
			if got := strings.Fields(v)[0]; got != Version {
				t.Fatalf("scripts/versions.env OLMV1_VERSION=%s, framework/olmv1 says %s", got, Version)
			}
			return
		}
	}
	t.Fatal("scripts/versions.env has no OLMV1_VERSION")
}
