package operandcleanup

import (
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// AddToScheme adds every type the controller reads or writes.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1alpha1.AddToScheme, operatorsv1.AddToScheme} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}

// NewScheme returns a scheme with AddToScheme applied.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(AddToScheme(s))
	return s
}

// CacheOptions returns the manager cache settings the controller is designed for:
//   - CSVs: OLM's copies (label olm.copiedFrom) are not cached at all, and the large fields the controller
//     never reads are stripped (writes are patches, see stripCSV);
//   - operands: never cached (a cleanup pass lists them live, pass.go);
//   - everything: no managedFields.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: slimTransform,
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.ClusterServiceVersion{}: {Label: notCopiedSelector(), Transform: stripCSV},
		},
	}
}

// slimTransform drops managedFields everywhere.
func slimTransform(in interface{}) (interface{}, error) {
	if obj, err := meta.Accessor(in); err == nil && obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	return in, nil
}
