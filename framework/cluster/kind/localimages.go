package kind

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// LocalImagesPolicy is the MutatingAdmissionPolicy (and binding) EnsureLocalImages creates.
const LocalImagesPolicy = "cleanup-e2e-local-images"

// EnsureLocalImages makes pods use loaded images of the given registry prefixes (e.g. "fixtures.local/")
// instead of pulling them: a MutatingAdmissionPolicy (GA in Kubernetes 1.36, no webhook server) sets
// imagePullPolicy IfNotPresent on every container and init container whose image has such a prefix.
//
// Why: nothing can be pulled here, and some pods are not ours to write. OLM gives tag-referenced images
// imagePullPolicy Always (pkg/lib/image.InferImagePullPolicy): its bundle unpack Jobs' "pull" container
// and grpc CatalogSource pods would fail with ErrImagePull for images that are on the node. Upstream's
// own e2e pushes to a registry instead; this keeps the kind tier registry-less. Idempotent.
func (p *Provider) EnsureLocalImages(ctx context.Context, prefixes ...string) error {
	if len(prefixes) == 0 {
		return nil
	}
	cs, err := kubernetes.NewForConfig(p.cfg)
	if err != nil {
		return err
	}
	quoted := make([]string, len(prefixes))
	for i, pre := range prefixes {
		quoted[i] = "'" + strings.ReplaceAll(pre, "'", "") + "'"
	}
	local := fmt.Sprintf("[%s].exists(p, c.image.startsWith(p))", strings.Join(quoted, ", "))
	list := func(field string) string {
		return fmt.Sprintf(`has(object.spec.%[1]s) && object.spec.%[1]s.exists(c, %[2]s && (!has(c.imagePullPolicy) || c.imagePullPolicy != 'IfNotPresent'))`, field, local)
	}
	mutate := func(field string) string {
		return fmt.Sprintf(`%[3]s ? Object{spec: Object.spec{%[1]s: object.spec.%[1]s.filter(c, %[2]s).map(c, Object.spec.%[1]s{name: c.name, imagePullPolicy: "IfNotPresent"})}} : Object{}`,
			field, local, list(field))
	}
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: LocalImagesPolicy},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
							Resources: []string{"pods"}},
					},
				}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "pulls-a-local-image",
				Expression: list("containers") + " || " + list("initContainers"),
			}},
			Mutations: []admissionregistrationv1.Mutation{
				{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: mutate("containers")}},
				{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: mutate("initContainers")}},
			},
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: LocalImagesPolicy},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: LocalImagesPolicy},
	}
	api := cs.AdmissionregistrationV1()
	if live, err := api.MutatingAdmissionPolicies().Get(ctx, policy.Name, metav1.GetOptions{}); err == nil {
		policy.ResourceVersion = live.ResourceVersion
		_, err = api.MutatingAdmissionPolicies().Update(ctx, policy, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update MutatingAdmissionPolicy %s: %w", policy.Name, err)
		}
	} else if _, err := api.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create MutatingAdmissionPolicy %s (Kubernetes >= 1.36 serves it by default): %w", policy.Name, err)
	}
	if _, err := api.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create MutatingAdmissionPolicyBinding %s: %w", binding.Name, err)
	}
	// The API server applies new policies once its informers see them: wait until a dry-run pod is mutated.
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "local-images-probe-", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: prefixes[0] + "probe:v0",
			ImagePullPolicy: corev1.PullAlways}}},
	}
	err = intervals.Wait(ctx, intervals.AdmissionPolicy, func() (bool, string) {
		out, err := cs.CoreV1().Pods(probe.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		got := out.Spec.Containers[0].ImagePullPolicy
		return got == corev1.PullIfNotPresent, "a dry-run pod still gets imagePullPolicy " + string(got)
	})
	if err != nil {
		return fmt.Errorf("MutatingAdmissionPolicy %s does not take effect on a dry-run pod: %w", LocalImagesPolicy, err)
	}
	return nil
}
