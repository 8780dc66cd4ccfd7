package configv1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of ClusterOperator.
const GroupName = "config.openshift.io"

var (
	// GroupVersion is config.openshift.io/v1.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}
	// SchemeGroupVersion is an alias of GroupVersion, for code written against openshift/api.
	SchemeGroupVersion = GroupVersion
	// ClusterOperatorGVK is the GroupVersionKind of ClusterOperator.
	ClusterOperatorGVK = GroupVersion.WithKind("ClusterOperator")
	// ClusterOperatorGVR is the GroupVersionResource of ClusterOperator.
	ClusterOperatorGVR = GroupVersion.WithResource("clusteroperators")

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers ClusterOperator and ClusterOperatorList.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ClusterOperator{}, &ClusterOperatorList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
