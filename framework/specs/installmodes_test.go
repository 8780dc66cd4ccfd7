package specs_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/cleanup-e2e/cleanup-e2e/bundles"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

var allNamespacesOnlyBundle = filepath.Join("testdata", "allnamespaces-only")

func TestSupportedInstallModesFollowTheCSV(t *testing.T) {
	for _, tc := range []struct {
		name, dir string
		want      []operatorsv1alpha1.InstallModeType
	}{
		{"an AllNamespaces-only operator runs only globally", allNamespacesOnlyBundle,
			[]operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeAllNamespaces}},
		{"every supported mode, the isolated ones first", bundles.Dir("widget-operator", "v0.1.0"),
			[]operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorsv1alpha1.InstallModeTypeSingleNamespace,
				operatorsv1alpha1.InstallModeTypeMultiNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces}},
		{"CSV order does not matter; unsupported modes are left out", writeBundle(t, csvWithModes(
			"{type: AllNamespaces, supported: true}", "{type: MultiNamespace, supported: false}", "{type: SingleNamespace, supported: true}")),
			[]operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeSingleNamespace, operatorsv1alpha1.InstallModeTypeAllNamespaces}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := specs.SupportedInstallModes(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("modes = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSupportedInstallModesNamesTheBundleAndFieldWhenNoneIsSupported(t *testing.T) {
	dir := writeBundle(t, csvWithModes("{type: OwnNamespace, supported: false}", "{type: AllNamespaces, supported: false}"))
	_, err := specs.SupportedInstallModes(dir)
	if err == nil {
		t.Fatal("a CSV supporting no install mode must be an error")
	}
	for _, want := range []string{dir, "test-operator.v0.1.0", "spec.installModes", "supported: true"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestSupportedInstallModesSaysTheInputFieldWhenTheBundleIsUnreadable(t *testing.T) {
	_, err := specs.SupportedInstallModes(filepath.Join(t.TempDir(), "missing"))
	if err == nil || !strings.Contains(err.Error(), "OperandCleanupSpecInput.InstallModes") {
		t.Errorf("error = %v, want it to say the empty InstallModes made the framework read the bundle", err)
	}
}

func csvWithModes(modes ...string) string {
	return `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: test-operator.v0.1.0
spec:
  installModes: [` + strings.Join(modes, ", ") + `]
`
}
