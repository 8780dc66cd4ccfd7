package uninstall

import (
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
)

func TestUninstall(t *testing.T) { suite.RunSpecs(t, "memcached-operator uninstall") }

var _ = specs.DescribeOperandCleanup(Spec(suite.Environment(Cluster()), Bundle(envvar.Provider.Get())))
