package envtest

import (
	"context"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olm"
	"github.com/cleanup-e2e/cleanup-e2e/framework/process"
	"github.com/cleanup-e2e/cleanup-e2e/framework/toolchain"
)

// OLMNamespace is where the olm-operator is told it lives (it keeps nothing there on envtest).
const OLMNamespace = "olm"

// startOLM runs the real olm-operator binary out of cluster against the provider. Its health server is
// fixed on :8080; a second OLM on the machine only logs that the port is taken and works on, so the
// framework checks readiness by asking OLM to reconcile an OperatorGroup instead.
func startOLM(ctx context.Context, c client.Client, workDir, kubeconfig string) (*process.Process, error) {
	bin, err := toolchain.OLM.Path()
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OLMNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	return process.Start(process.Spec{
		Name: "olm-operator",
		Path: bin,
		Args: []string{"--namespace=" + OLMNamespace, "--writeStatusName=", "--writePackageServerStatusName="},
		Env:  []string{"KUBECONFIG=" + kubeconfig, "OPERATOR_NAMESPACE=" + OLMNamespace},
		// The work dir in the command line lets the reaper find it after a crash of this process.
		Dir:     workDir,
		LogPath: filepath.Join(workDir, "logs", "olm.log"),
	})
}

func waitOLM(ctx context.Context, c client.Client, p *process.Process, o options) error {
	wctx, cancel := context.WithTimeout(ctx, o.olmTimeout)
	defer cancel()
	return p.WaitFor(wctx, "OLM to reconcile its probe OperatorGroup", 250*time.Millisecond, func(ctx context.Context) bool {
		ok, _ := olm.Reconciling(ctx, c)
		return ok
	})
}
