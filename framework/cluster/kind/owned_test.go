package kind

import (
	"strings"
	"testing"
)

// Only clusters the provider created are deleted: a cluster of a name the user gave, not created by
// it, may be the user's own. The default name is cleanup-e2e's.
func TestTheProviderDeletesOnlyClustersItCreated(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // os.UserCacheDir on Linux
	if !createdByProvider(defaultName) {
		t.Fatalf("%s, the default name, is cleanup-e2e's", defaultName)
	}
	const theirs = "my-dev-cluster"
	if createdByProvider(theirs) {
		t.Fatalf("%s counts as created by the provider before it created it", theirs)
	}
	if err := noteCreating(theirs); err != nil {
		t.Fatal(err)
	}
	if !createdByProvider(theirs) {
		t.Fatalf("%s, created by the provider, does not count as its", theirs)
	}
	forgetCreated(theirs)
	if createdByProvider(theirs) {
		t.Fatalf("%s still counts as the provider's after its deletion", theirs)
	}
	err := errNotOurs(theirs, "its node image is outdated")
	for _, want := range []string{theirs, "left alone", "its node image is outdated", "kind delete cluster --name " + theirs, "CLEANUP_E2E_KIND_CLUSTER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}
