package kind

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	kindcluster "sigs.k8s.io/kind/pkg/cluster"
)

// The provider deletes only kind clusters it created. A cluster of the name it was given that it did
// not create may be the user's own (CLEANUP_E2E_KIND_CLUSTER set to it): an outdated node image,
// WithoutReuse or Stop deleted it. So the provider notes each cluster it creates in a marker file,
// and leaves any other alone, saying so. The default name is cleanup-e2e's own and counts as created
// by it (its clusters from before the markers carry none).

// defaultName is the cluster's name without WithName.
const defaultName = "cleanup-e2e"

// markerPath is the marker of cluster name: in the user's cache, which outlives $TMPDIR as the
// cluster's containers outlive a reboot.
func markerPath(name string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "cleanup-e2e", "kind-clusters", name)
}

// noteCreating marks name as created by the provider, before its creation starts (a creation that
// fails half-way leaves a cluster that Stop must be able to delete).
func noteCreating(name string) error {
	path := markerPath(name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("note kind cluster %s as cleanup-e2e's: %w", name, err)
	}
	return os.WriteFile(path, []byte("created by the cleanup-e2e kind provider\n"), 0o644)
}

func forgetCreated(name string) { _ = os.Remove(markerPath(name)) }

// createdByProvider reports whether the provider created cluster name (or it has the default name).
func createdByProvider(name string) bool {
	if name == defaultName {
		return true
	}
	_, err := os.Stat(markerPath(name))
	return err == nil
}

// errNotOurs is the error for a cluster of that name the provider did not create.
func errNotOurs(name, why string) error {
	return fmt.Errorf("kind cluster %q exists and was not created by cleanup-e2e, so it is left alone (%s): delete it "+
		"yourself if it is yours to lose (kind delete cluster --name %s), or give the run another name "+
		"(CLEANUP_E2E_KIND_CLUSTER, kind.WithName)", name, why, name)
}

// DeleteCluster deletes the cluster WithName names when the provider created it (one it did not create
// is left alone, with an error saying so) and the providers' kubeconfig copies of it: the end of a
// cluster kept with WithKeepCluster, such as make e2e's shared one. No cluster of that name: nothing
// to delete. Options other than WithName, WithLogger and WithWorkRoot are ignored.
func DeleteCluster(opts ...Option) error {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	p := &Provider{
		opts:    o,
		kind:    kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(kindLogger{o.log.WithName("kind")})),
		workDir: filepath.Join(o.workRoot, "kind-"+o.name),
	}
	return errors.Join(p.deleteExisting("DeleteCluster"), os.RemoveAll(p.workDir))
}
