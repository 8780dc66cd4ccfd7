// Package testenv brings up what a test front end hands to the specs: the provider named by
// $CLEANUP_E2E_PROVIDER (or the input), the stack ensured on it (framework/stack) and an admin client
// with the suite's types — a cluster.Environment — and takes it down again. The Ginkgo front end
// (framework/suite) and the e2e-framework one (framework/e2eframework) both use it, so a cluster is
// set up one way whatever runs the specs.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cleanup-e2e/cleanup-e2e/framework/budget"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/envtest"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/existing"
	"github.com/cleanup-e2e/cleanup-e2e/framework/cluster/kind"
	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/envvar"
	"github.com/cleanup-e2e/cleanup-e2e/framework/kube"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/framework/olmv1/incluster"
	"github.com/cleanup-e2e/cleanup-e2e/framework/stack"
	"github.com/cleanup-e2e/cleanup-e2e/internal/kindsetup"
)

// Input is Config's earlier name.
//
// Deprecated: use Config.
type Input = Config

// Config is the configuration of the cluster under test: which cluster the tests need (its provider
// and name, the images to run) and what must run on it (the stack, your API types).
type Config struct {
	// Name identifies the provider in logs and artifact paths.
	Name string
	// Provider is envtest, kind or existing; "" reads $CLEANUP_E2E_PROVIDER (envtest when unset).
	Provider string
	// Registry holds the images the envtest provider runs in-process (calling their Main, see
	// docs/CONTRACTS.md). With Stack.OperandCleanup the controller's image is added when missing. A
	// cluster with nodes (kind, existing) runs images itself: they must be loaded or pullable there.
	Registry *localruntime.Registry
	// Stack is what must run on the cluster before the specs (stack.ForOperandCleanup(),
	// stack.ForPayloads(), plus the suite's CRDs and footprint). It is ensured the same way on every
	// provider; on envtest, Stack.OLM also starts olm-operator.
	Stack stack.Components
	// Schemes add the suite's own types to the specs' client (the built-in, CRD and OLM types are
	// always there).
	Schemes []func(*runtime.Scheme) error
	// Images are the suite's own images (its operator's, built by its own build) that a provider with
	// nodes must run: kind loads them from the host's Docker into its nodes and never pulls them
	// (imagePullPolicy IfNotPresent); on an existing cluster they must be pullable or loaded already;
	// envtest runs the Registry's entrypoints instead.
	Images []string
	// KeepCluster leaves a kind cluster running on Stop (other processes still use it).
	KeepCluster bool
	// Log reports progress (what was started, found, installed, removed).
	Log logr.Logger
}

// ProviderName is in.Provider, else $CLEANUP_E2E_PROVIDER, else envtest.
func (in Config) ProviderName() string {
	if in.Provider != "" {
		return in.Provider
	}
	if p := envvar.Provider.Get(); p != "" {
		return p
	}
	return "envtest"
}

// Env is a started provider with its stack: the Environment the specs take, and what Stop undoes.
type Env struct {
	cluster.Environment
	// Stack is what runs on the cluster for the specs, and what of it this run created.
	Stack *stack.Stack
	// hold is the run's hold on a shared cluster (runlock.go); nil on envtest.
	hold *runHold
	// apiLocks is the path Environment.APIs locks next to (apiLocksPath), for the run's other processes.
	apiLocks string
	// name is the run's (Config.Name): its set-up and teardown in the time budget.
	name string
	// olmv1 is OLM v1 on kind with the test registry this process serves (olmv1.go); nil when the
	// provider brought it (envtest), another run serves it, or the stack does not need it.
	olmv1 *incluster.Running
}

// Start starts the provider, ensures the stack on it and builds the specs' client. On error, what it
// started is stopped again. On a shared cluster the run holds it shared (runlock.go), and the disruptive
// lock when its stack has something disruptive (disruptive.go).
func Start(ctx context.Context, in Config) (*Env, error) {
	if in.Log.GetSink() == nil {
		in.Log = logr.Discard()
	}
	var err error
	var hold *runHold
	if in.Shared() {
		if hold, err = processLocks.lockRun(ctx, runLockPath(in), in.Log); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil && hold != nil {
			_ = hold.release(ctx, "", nil)
		}
	}()
	failed := func() bool { return err != nil }
	done := budget.Start("setup "+in.Name, "provider-ready", failed)
	p, err := newProvider(ctx, in)
	done()
	if err != nil {
		return nil, fmt.Errorf("start provider %s=%s: %w", envvar.Provider.Name, in.ProviderName(), err)
	}
	env, err := Connected(p, in.Schemes...)
	if err != nil {
		return nil, errors.Join(err, p.Stop(context.WithoutCancel(ctx)))
	}
	done = budget.Start("setup "+in.Name, "stack-ready", failed)
	var v1 *incluster.Running
	first := func(ctx context.Context) (err error) { // OLM v1 on kind: what the kind provider brings, as envtest's does
		if in.Stack.OLMv1 && in.LoadsImages() { // its managers run from the images loaded into the nodes
			v1, err = olmv1OnKind(ctx, env.Client, in.Log.WithName("olmv1"))
		}
		return err
	}
	s, err := ensureStack(ctx, hold, stack.Input{Components: in.Stack, Client: env.Client, Log: in.Log.WithName("stack")}, first)
	done()
	if err != nil {
		if v1 != nil {
			err = errors.Join(err, v1.Stop(context.WithoutCancel(ctx)))
		}
		return nil, errors.Join(fmt.Errorf("ensure the stack on provider %s: %w", p.Name(), err), p.Stop(context.WithoutCancel(ctx)))
	}
	locks := apiLocksPath(hold, p)
	if locks != "" {
		env.APIs = newAPILocker(locks, in.Log)
	}
	return &Env{Environment: env, Stack: s, hold: hold, apiLocks: locks, name: in.Name, olmv1: v1}, nil
}

// apiLocksPath is where the cluster's API locks are (apilock.go): next to the run lock on a shared
// cluster, in the work directory of an envtest cluster, which the Ginkgo processes of its run share.
func apiLocksPath(hold *runHold, p cluster.Provider) string {
	if hold != nil {
		return hold.p.path
	}
	if w, ok := p.(interface{ WorkDir() string }); ok && w.WorkDir() != "" {
		return filepath.Join(w.WorkDir(), "run.lock")
	}
	return ""
}

// ensureStack runs first, then ensures the stack. On a shared cluster runs ensure one at a time (each probes OLM in the
// same namespace, and two installing the same piece would collide), and a run whose stack has something
// disruptive (stack.Components.Disruptive) first takes the disruptive lock (disruptive.go).
func ensureStack(ctx context.Context, hold *runHold, in stack.Input, first func(context.Context) error) (*stack.Stack, error) {
	if hold == nil {
		if err := first(ctx); err != nil {
			return nil, err
		}
		return stack.Ensure(ctx, in)
	}
	if disruptive := in.Disruptive(); len(disruptive) > 0 {
		if err := hold.useDisruptive(ctx, strings.Join(disruptive, ", ")); err != nil {
			return nil, err
		}
	}
	lock, err := lockFile(hold.p.path+".ensure", in.Log, "another run is ensuring the stack; waiting for it")
	if err != nil {
		return nil, err
	}
	defer unlockFile(lock)
	if err := first(ctx); err != nil {
		return nil, err
	}
	return stack.Ensure(ctx, in)
}

// Alone waits until no other run is in a section on the shared cluster (they stay alive, waiting) and
// holds it alone until done is called: for a spec that acts on the whole cluster (stopping OLM, a
// global install without specs.Installation, which locks only its APIs: apilock.go). why names the
// spec in the log of a run that waits. It also waits for the runs that have something disruptive on the
// cluster to end (disruptive.go), except for this run's own. On envtest (the run's own cluster) it
// returns at once.
func (e *Env) Alone(ctx context.Context, why string) (done func(), err error) {
	if e.hold == nil {
		return func() {}, nil
	}
	defer budget.Start(why, "cluster-alone", nil)() // the time budget shows the wait, named by why
	return e.hold.alone(ctx, why)
}

// Stop tears the stack down, unless the provider deletes the cluster anyway, then stops the provider.
// On a shared cluster, a Stop that removes anything first waits until it is the last run alive.
func (e *Env) Stop(ctx context.Context) error {
	d, ok := e.Provider.(cluster.Disposable)
	deletes := ok && d.DeletesClusterOnStop()
	teardown := e.Stack != nil && !deletes
	removed := false
	// On a shared cluster the time budget shows how long the run waited to be the last one alive
	// (last-run) and how long removing took (teardown).
	waited := func() {}
	if e.hold != nil {
		waited = sync.OnceFunc(budget.Start("teardown "+e.name, "last-run", nil))
	}
	stopAll := func() error {
		waited()
		if e.hold != nil {
			defer budget.Start("teardown "+e.name, "teardown", nil)()
		}
		removed = true
		var errs []error
		if teardown {
			errs = append(errs, e.Stack.Teardown(ctx))
		}
		if e.olmv1 != nil && !deletes {
			errs = append(errs, e.olmv1.Stop(ctx))
		} else if e.olmv1 != nil {
			errs = append(errs, e.olmv1.Registry.Stop())
		}
		return errors.Join(append(errs, e.Provider.Stop(ctx))...)
	}
	var err error
	if e.hold != nil && e.hold.holdsDisruptive() && e.Stack != nil {
		// What changes the cluster for the other runs goes now, while the run is still in its section, not
		// once it is the last run alive: meanwhile the others may need the cluster alone (disruptive.go).
		err = e.Stack.RemoveDisruptive(ctx)
	}
	switch {
	case e.hold == nil:
		err = stopAll()
	case deletes:
		err = errors.Join(err, e.hold.release(ctx, "the run deletes the cluster", stopAll))
	case (teardown && e.Stack.MayRemove()) || e.olmv1 != nil:
		rerr := e.hold.release(ctx, "the run removes what it installed and what its specs left", stopAll)
		if !removed { // the wait ended first: removing now could pull the stack from under other runs
			rerr = errors.Join(fmt.Errorf("%w; so it did not remove %v nor what its specs left", rerr, e.Stack.Created()), e.Provider.Stop(ctx))
		}
		err = errors.Join(err, rerr)
	default:
		err = errors.Join(err, stopAll(), e.hold.release(ctx, "", nil))
	}
	waited() // when the wait ended without removing
	if err != nil {
		return fmt.Errorf("stop provider %s: %w", e.Provider.Name(), err)
	}
	return nil
}

// Connected is the Environment of a provider: it and an admin client (kube.MustScheme plus schemes).
func Connected(p cluster.Provider, schemes ...func(*runtime.Scheme) error) (cluster.Environment, error) {
	c, err := kube.NewClient(p.RESTConfig(), kube.MustScheme(schemes...))
	if err != nil {
		return cluster.Environment{}, fmt.Errorf("client for provider %s: %w", p.Name(), err)
	}
	return cluster.Environment{Provider: p, Client: c}, nil
}

// newProvider starts the provider in.ProviderName() names. It only creates or connects to the
// cluster: what runs on it is the stack's (Start).
func newProvider(ctx context.Context, in Config) (cluster.Provider, error) {
	switch name := in.ProviderName(); name {
	case "envtest":
		registry, err := registryFor(in)
		if err != nil {
			return nil, err
		}
		opts := []envtest.Option{envtest.WithName(in.Name), envtest.WithLogger(in.Log.WithName(in.Name)),
			envtest.WithRegistry(registry)}
		if !in.Stack.OLM {
			opts = append(opts, envtest.WithoutOLM())
		}
		if in.Stack.OLMv1 {
			opts = append(opts, envtest.WithOLMv1())
		}
		return envtest.New(ctx, opts...)
	case "existing":
		return existing.New(ctx, existing.WithName(in.Name), existing.WithLogger(in.Log.WithName(in.Name)),
			existing.WithContext(envvar.KubeContext.Get()))
	case "kind":
		return kindsetup.SetUp(ctx, in.Log.WithName("kind"), in.KeepCluster, in.Images...)
	default:
		return nil, fmt.Errorf("%s=%q: unknown provider (known: envtest, existing, kind)", envvar.Provider.Name, name)
	}
}

// Shared is what another process needs to Connect to a cluster this process started: the provider's
// kind and name, for envtest the kubeconfig it wrote, and where its API locks are.
type Shared struct {
	Kind, Name, Kubeconfig string
	// APILocks is the path the cluster's API locks are next to (apiLocksPath): the run's other
	// processes take the same ones.
	APILocks string `json:",omitempty"`
}

// sharedOf describes p for Connect.
func sharedOf(p cluster.Provider) Shared {
	return Shared{Kind: p.Kind(), Name: p.Name(), Kubeconfig: p.KubeconfigPath()}
}

// Share describes the run's cluster for Connect in another process of the run (a Ginkgo process),
// with the API locks' path so that its specs take the same API locks (APILocker).
func (e *Env) Share() Shared {
	s := sharedOf(e.Provider)
	s.APILocks = e.apiLocks
	return s
}

// APILocker is the cluster's API locks (cluster.APILocker); nil when s names none (a cluster not
// started by Start).
func (s Shared) APILocker(log logr.Logger) cluster.APILocker {
	if s.APILocks == "" {
		return nil
	}
	return newAPILocker(s.APILocks, log)
}

// Connect attaches to a cluster another process started (s from sharedOf there): it installs nothing
// and stops nothing of the cluster's. On envtest, the processes of the cluster (control plane, OLM, the
// local runtime running every operator) stay in the process that started it.
func Connect(ctx context.Context, s Shared, log logr.Logger) (cluster.Provider, error) {
	switch s.Kind {
	case "existing":
		return existing.New(ctx, existing.WithName(s.Name), existing.WithLogger(log.WithName(s.Name)),
			existing.WithContext(envvar.KubeContext.Get()))
	case "envtest":
		return envtest.Connect(s.Kubeconfig, envtest.WithName(s.Name), envtest.WithLogger(log.WithName(s.Name)))
	default:
		return kind.Connect(ctx, kind.WithName(s.Name), kind.WithLogger(log.WithName("kind")))
	}
}

// registryFor is the input's registry plus, when the stack has the operand-cleanup controller, its
// image (so that on envtest the Deployment the stack installs runs): the built-in entrypoint a linked
// package registered (framework/components/operandcleanupruntime, imported by framework/specs).
func registryFor(in Config) (*localruntime.Registry, error) {
	r := in.Registry
	if r == nil {
		r = localruntime.NewRegistry()
	}
	if in.Stack.OperandCleanup && !r.Registered(components.OperandCleanupImage) {
		ep, ok := localruntime.Builtin(components.OperandCleanupImage)
		if !ok {
			return nil, fmt.Errorf("Stack.OperandCleanup on envtest: nothing runs the controller's image %s in-process; import "+
				"framework/specs, or _ \"github.com/cleanup-e2e/cleanup-e2e/framework/components/operandcleanupruntime\" in your suite",
				components.OperandCleanupImage)
		}
		r.Register(components.OperandCleanupImage, ep)
	}
	return r, nil
}

// Shared reports whether the provider's cluster is the machine's one cluster (kind, existing), which
// runs take turns on (runlock.go) and whose processes all use it. An envtest cluster is the run's own;
// in a parallel run its processes share it too (framework/suite): process 1 starts it, the others Connect.
func (in Config) Shared() bool {
	p := in.ProviderName()
	return p == "kind" || p == "existing"
}

// What the provider a run uses can do, known before it starts: a Ginkgo suite builds its spec tree
// first, and specs that need pods exist only where pods run.

// RunsPods reports whether the provider's nodes run pods (kind, existing); envtest runs only the
// operators of its registry, in-process.
func (in Config) RunsPods() bool { return in.ProviderName() != "envtest" }

// LoadsImages reports whether the provider loads the images scripts/images.sh built into its nodes
// (kind); on an existing cluster they must be there already.
func (in Config) LoadsImages() bool { return in.ProviderName() == "kind" }
