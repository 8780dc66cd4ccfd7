package specs

import (
	"context"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
)

// Upgrade moves the installation to the next bundle (its CSV replaces the installed one), waits until
// OLM finished the upgrade, and follows the new CSV.
func (r *Installation) Upgrade(ctx context.Context, bundleDir string) {
	r.t.Step("upgrading " + r.csv.Name + " to " + bundleDir)
	csv, err := olm.Upgrade(ctx, olm.UpgradeInput{Client: r.c, From: r.csv, BundleDir: bundleDir, Timeout: r.in.Timeout})
	r.g.Expect(err).NotTo(HaveOccurred())
	r.Follow(csv)
}

// StartUpgrade creates the next bundle's CSV and returns it at once, without following it: the spec acts
// in the middle of the upgrade. withoutRequirements keeps the new CSV Pending (see olm.UpgradeInput).
func (r *Installation) StartUpgrade(ctx context.Context, bundleDir string, withoutRequirements bool) *operatorsv1alpha1.ClusterServiceVersion {
	r.t.Step("starting the upgrade of " + r.csv.Name + " to " + bundleDir)
	csv, err := olm.StartUpgrade(ctx, olm.UpgradeInput{Client: r.c, From: r.csv, BundleDir: bundleDir, Timeout: r.in.Timeout, WithoutRequirements: withoutRequirements})
	r.g.Expect(err).NotTo(HaveOccurred())
	r.csvUIDs = append(r.csvUIDs, csv.UID) // its leftovers are this installation's too
	return csv
}

// Follow makes csv the installation's CSV (e.g. a successor the spec created with StartUpgrade): later
// steps (Uninstall, ExpectUninstalled, LiveCSV) act on it.
func (r *Installation) Follow(csv *operatorsv1alpha1.ClusterServiceVersion) {
	r.csv = csv
	r.csvUIDs = append(r.csvUIDs, csv.UID)
}
