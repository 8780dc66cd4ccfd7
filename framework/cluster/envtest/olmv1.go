package envtest

import (
	"context"
	"errors"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1"
)

// WithOLMv1 also runs OLM v1: operator-controller and catalogd as child processes (olmv1.Start), their
// CRDs installed with the control plane, and an in-process registry for test bundles, published in
// olmv1.RegistryConfigMap so that every process of the run finds it. The CRDs go in before
// kube-controller-manager starts: its garbage collector learns of a later CRD only at its next
// discovery sync (every 30 s) and until then leaves a deleted ClusterExtension's dependents alone.
func WithOLMv1() Option { return func(o *options) { o.olmv1 = true } }

// olmv1Running is OLM v1 as the provider runs it.
type olmv1Running struct {
	registry *olmv1.Registry
	managers *olmv1.Managers
}

// startOLMv1 starts the registry and both managers and publishes the registry.
func (p *Provider) startOLMv1(ctx context.Context, c client.Client) (err error) {
	run := &olmv1Running{}
	p.olmv1 = run
	if run.registry, err = olmv1.StartRegistry(); err != nil {
		return err
	}
	run.managers, err = olmv1.Start(ctx, olmv1.Config{Client: c, Kubeconfig: p.kubeconfig,
		WorkDir: filepath.Join(p.workDir, "olmv1"), LogDir: filepath.Join(p.workDir, "logs"),
		InsecureRegistries: []string{run.registry.Host}})
	if err != nil {
		return err
	}
	return olmv1.Publish(ctx, c, olmv1.Endpoint{Push: run.registry.Host, Pull: run.registry.Host})
}

// stop stops the managers, then the registry they pull from.
func (r *olmv1Running) stop() error {
	if r == nil {
		return nil
	}
	var errs []error
	if r.managers != nil {
		errs = append(errs, r.managers.Stop())
	}
	if r.registry != nil {
		errs = append(errs, r.registry.Stop())
	}
	return errors.Join(errs...)
}
