package cleanup

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/specs"
)

// StallTimeoutAnnotation shortens the stall timeout of one CSV (the controller's default is 10 minutes).
const stallTimeoutAnnotation = "operatorframework.io/cleanup-stall-timeout"

var _ = Describe("A stalled operand cleanup", Label("operand-cleanup", "cleanup-stalled"), func() {
	It("raises a CleanupStalled Warning event naming the blocking Widget, and finishes once it is unblocked", func(ctx context.Context) {
		r := specs.NewInstallation(ctx, widgetOperator, operatorsv1alpha1.InstallModeTypeOwnNamespace)
		r.Install(ctx, widgetOperator.BundleDir, ptr.To(true))
		r.CreateOperands(ctx)
		widgets, _ := r.Operands(r.WatchedNamespaces(), false)
		failing := widgets[0]

		By("making the Widget's finalizer fail and shortening the stall timeout to 3s")
		setWidgetFail(ctx, failing, true)
		csv := r.CSV()
		Expect(k8s.Patch(ctx, csv, client.RawPatch("application/merge-patch+json",
			[]byte(`{"metadata":{"annotations":{"`+stallTimeoutAnnotation+`":"3s"}}}`)))).To(Succeed())

		r.Uninstall(ctx)
		Eventually(func() ([]string, error) { return stallEvents(ctx, csv) }).WithContext(ctx).WithTimeout(time.Minute).
			Should(ContainElement(ContainSubstring(failing.GetName())), "a CleanupStalled Warning on the CSV naming Widget %s", failing.GetName())

		By("clearing the fail knob: cleanup completes")
		setWidgetFail(ctx, failing, false)
		r.ExpectRemoved(ctx, widgets)
		r.ExpectUninstalled(ctx)
	})
})

func setWidgetFail(ctx context.Context, w *unstructured.Unstructured, fail bool) {
	patch := []byte(`{"spec":{"fail":false}}`)
	if fail {
		patch = []byte(`{"spec":{"fail":true}}`)
	}
	Expect(k8s.Patch(ctx, w.DeepCopy(), client.RawPatch("application/merge-patch+json", patch))).To(Succeed())
}

// stallEvents returns the messages of Warning CleanupStalled events on the CSV.
func stallEvents(ctx context.Context, csv *operatorsv1alpha1.ClusterServiceVersion) ([]string, error) {
	events := &corev1.EventList{}
	if err := k8s.List(ctx, events, client.InNamespace(csv.Namespace)); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range events.Items {
		if e.Reason == "CleanupStalled" && e.Type == corev1.EventTypeWarning &&
			e.InvolvedObject.Kind == "ClusterServiceVersion" && e.InvolvedObject.Name == csv.Name {
			out = append(out, e.Message)
		}
	}
	return out, nil
}
