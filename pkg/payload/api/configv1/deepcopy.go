package configv1

import "k8s.io/apimachinery/pkg/runtime"

// Hand-written deep copies (the types are few and flat).

func (in *ClusterOperator) DeepCopyInto(out *ClusterOperator) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
	in.Status.DeepCopyInto(&out.Status)
}

func (in *ClusterOperator) DeepCopy() *ClusterOperator {
	if in == nil {
		return nil
	}
	out := new(ClusterOperator)
	in.DeepCopyInto(out)
	return out
}

func (in *ClusterOperator) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}

func (in *ClusterOperatorStatus) DeepCopyInto(out *ClusterOperatorStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]ClusterOperatorStatusCondition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
	if in.Versions != nil {
		out.Versions = append([]OperandVersion(nil), in.Versions...)
	}
	if in.RelatedObjects != nil {
		out.RelatedObjects = append([]ObjectReference(nil), in.RelatedObjects...)
	}
	in.Extension.DeepCopyInto(&out.Extension)
}

func (in *ClusterOperatorStatus) DeepCopy() *ClusterOperatorStatus {
	if in == nil {
		return nil
	}
	out := new(ClusterOperatorStatus)
	in.DeepCopyInto(out)
	return out
}

func (in *ClusterOperatorStatusCondition) DeepCopyInto(out *ClusterOperatorStatusCondition) {
	*out = *in
	in.LastTransitionTime.DeepCopyInto(&out.LastTransitionTime)
}

func (in *ClusterOperatorStatusCondition) DeepCopy() *ClusterOperatorStatusCondition {
	if in == nil {
		return nil
	}
	out := new(ClusterOperatorStatusCondition)
	in.DeepCopyInto(out)
	return out
}

func (in *ClusterOperatorList) DeepCopyInto(out *ClusterOperatorList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]ClusterOperator, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

func (in *ClusterOperatorList) DeepCopy() *ClusterOperatorList {
	if in == nil {
		return nil
	}
	out := new(ClusterOperatorList)
	in.DeepCopyInto(out)
	return out
}

func (in *ClusterOperatorList) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
