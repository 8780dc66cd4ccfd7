package envvar_test

import (
	"os"
	"strings"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
)

func TestPrefixedNameWins(t *testing.T) {
	t.Setenv("CLEANUP_E2E_PROVIDER", "kind")
	t.Setenv("PROVIDER", "existing")
	if got := envvar.Provider.Get(); got != "kind" {
		t.Fatalf("got %q, want the prefixed name's kind", got)
	}
}

// unset clears a variable for the test (the runner may export it) and restores it after.
func unset(t *testing.T, name string) {
	t.Setenv(name, "")
	_ = os.Unsetenv(name)
}

func TestLegacyNameIsReadWhenItsValueIsOurs(t *testing.T) {
	unset(t, "CLEANUP_E2E_PROVIDER")
	t.Setenv("PROVIDER", "existing")
	if got := envvar.Provider.Get(); got != "existing" {
		t.Fatalf("got %q, want the legacy PROVIDER's existing", got)
	}
}

// A consumer CI's own PROVIDER=aws is not ours: it is ignored, not "unknown provider".
func TestLegacyNameWithAnotherMeaningIsIgnored(t *testing.T) {
	unset(t, "CLEANUP_E2E_PROVIDER")
	t.Setenv("PROVIDER", "aws")
	if got := envvar.Provider.Get(); got != "" {
		t.Fatalf("got %q, want PROVIDER=aws ignored", got)
	}
}

func TestPrefixedEmptyValueIsAnAnswer(t *testing.T) {
	t.Setenv("CLEANUP_E2E_SHARD", "")
	t.Setenv("SHARD", "1/2")
	if got := envvar.Shard.Get(); got != "" {
		t.Fatalf("got %q: setting the prefixed name (even empty) must win over the legacy one", got)
	}
}

func TestEveryVariableIsPrefixedAndDocumented(t *testing.T) {
	for _, v := range envvar.All {
		if len(v.Name) < len("CLEANUP_E2E_") || v.Name[:len("CLEANUP_E2E_")] != "CLEANUP_E2E_" || v.Doc == "" {
			t.Errorf("%+v: want a CLEANUP_E2E_ name and a Doc", v)
		}
	}
}

// The README's table lists every variable a user sets, so a user finds what to set without reading
// code; one the scripts set for their own children is named in the README too, outside the table.
func TestReadmeListsEveryVariable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, v := range envvar.All {
		row := strings.Contains(readme, "| `"+v.Name+"` |")
		switch {
		case !v.ByScripts && !row:
			t.Errorf("README.md's table of environment variables has no row for %s (%s)", v.Name, v.Doc)
		case v.ByScripts && row:
			t.Errorf("README.md's table lists %s, which the scripts set for their own children: name it outside the table", v.Name)
		case v.ByScripts && !strings.Contains(readme, "`"+v.Name+"`"):
			t.Errorf("README.md does not name %s (%s), which the scripts set for their own children", v.Name, v.Doc)
		}
	}
}
