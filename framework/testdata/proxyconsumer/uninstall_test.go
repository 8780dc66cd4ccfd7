// Package uninstall is the uninstall suite of an operator repo that requires cleanup-e2e as the module
// proxy serves it (framework/proxy_test.go writes its go.mod and copies a bundle beside it). The
// operator is the fixture widget-operator, run in-process; a real repo names its own image, main,
// bundle and checks here.
package uninstall

import (
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
	"github.com/cleanup-e2e/cleanup-e2e/fixtures/widget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
)

const image = "fixtures.local/widget-operator:v0.1.0"

func TestUninstall(t *testing.T) {
	suite.RunSpecs(t, "a consumer of the module as the proxy serves it")
}

var clusterUnderTest = suite.Environment(testenv.Config{Name: "proxy-consumer",
	Registry: localruntime.NewRegistry(map[string]localruntime.Entrypoint{image: fixtures.Binary}),
	Stack:    stack.ForOperandCleanup()})

var _ = specs.DescribeOperandCleanup(specs.OperandCleanupSpecInput{
	Environment: clusterUnderTest, Name: "widget-operator", BundleDir: "bundle",
	InstallModes:       []operatorsv1alpha1.InstallModeType{operatorsv1alpha1.InstallModeTypeOwnNamespace},
	Samples:            specs.MustALMExamples("bundle"),
	Reconciled:         widget.Reconciled,
	Finalized:          widget.Finalized,
	LeftoverNamespaces: []string{widget.DefaultRecordsNamespace},
})
