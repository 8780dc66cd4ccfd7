package deleteannotation_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cleanup-e2e/cleanup-e2e/framework/deleteannotation"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/framework/suite"
	"github.com/cleanup-e2e/cleanup-e2e/framework/testenv"
	configv1 "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/api/configv1"
	pt "github.com/cleanup-e2e/cleanup-e2e/pkg/payload/payloadtest"
)

// A Ginkgo suite proving that a release removes a component with release.openshift.io/delete: "true".
// DescribeRemoval runs its own payload applier per spec, so the cluster needs only the ClusterOperator CRD. The
// three parts are package-level declarations of a _test.go file; here they are in a function so that
// the example compiles without registering a suite.
func ExampleDescribeRemoval() {
	// func TestRemoval(t *testing.T) { suite.RunSpecs(t, "my-component removal") }
	testRemoval := func(t *testing.T) { suite.RunSpecs(t, "my-component removal") }

	clusterUnderTest := suite.Environment(testenv.Config{
		Name:    "my-component-removal",
		Stack:   stack.Components{ClusterOperatorCRD: true},
		Schemes: []func(*runtime.Scheme) error{configv1.AddToScheme},
	})

	_ = deleteannotation.DescribeRemoval(deleteannotation.SpecInput{
		Environment: clusterUnderTest,
		Name:        "my-component",
		// Release 1.0.0 ships the component; 1.1.0 keeps its manifests with the delete annotation
		// (pt.Delete), so the applier removes them. id makes every name unique to one spec.
		Payloads: func(id string) (installed, removal *pt.Builder) {
			installed = pt.New("1.0.0").
				File("0000_50_my-component_00_namespace.yaml", pt.Namespace(id)).
				File("0000_50_my-component_01_config.yaml", pt.ConfigMap(id, "config", map[string]string{"k": "v"})).
				File("0000_50_my-component_02_clusteroperator.yaml", pt.ClusterOperator(id, "operator", "1.0.0"))
			removal = pt.New("1.1.0").
				File("0000_50_my-component_00_namespace.yaml", pt.Delete(pt.Namespace(id))).
				File("0000_50_my-component_02_clusteroperator.yaml", pt.Delete(pt.ClusterOperator(id)))
			return installed, removal
		},
	})
	_ = testRemoval
}
