// Package framework is the map of cleanup-e2e's test framework, which operator repos import to prove
// that their operator uninstalls cleanly (its custom resources deleted, its finalizers run, nothing
// left behind) on envtest, kind or an existing cluster. It holds no code: start from one of the
// front ends below, whose godoc has a runnable example.
//
// # Where to start
//
//   - A Ginkgo suite: framework/suite (RunSpecs, Environment) with framework/specs
//     (DescribeOperandCleanup: the documented operand-cleanup cases for your operator under OLM v0;
//     DescribeOLMv1Uninstall: the same input under OLM v1). The example of package suite is a whole
//     uninstall suite.
//   - A sigs.k8s.io/e2e-framework suite: framework/e2eframework (New, Setup, Finish,
//     MustOperandCleanupFeatures): the same cluster and the same cases as features.
//   - A release payload that removes a component with the CVO's delete annotation:
//     framework/deleteannotation (DescribeRemoval).
//
// The walkthrough is docs/use-from-your-operator-repo.md; working consumers are
// examples/kubebuilder-scaffold (a fresh scaffold, its suite a module of its own),
// examples/memcached-operator and examples/operator-repo.
//
// # The words
//
//   - The cluster under test is a cluster.Environment: a provider (envtest, kind or existing, chosen by
//     $CLEANUP_E2E_PROVIDER) and a client, what every spec takes (through a func() cluster.Environment,
//     since the suite connects it after the spec tree is built: suite.Environment returns that func,
//     e2eframework.Cluster has it as a method). The provider (cluster.Provider) only creates or
//     connects to the cluster; testenv.Start returns a testenv.Env, the cluster.Environment with the
//     stack it ensured, which the front ends start and stop for you.
//   - Its configuration is a testenv.Config (earlier testenv.Input, still accepted): its name, the
//     images to run (a localruntime.Registry on envtest, Images on kind), the stack and your API types.
//     "Input" is left for what a spec or an install takes (specs.OperandCleanupSpecInput).
//   - The stack is what must run on the cluster for the specs: OLM, the operand-cleanup controller, the
//     ClusterOperator CRD, your CRDs. testenv.Config.Stack declares it (stack.ForOperandCleanup(),
//     stack.Components); it is detected, and what is missing is installed and removed at the end,
//     except OLM, which must be there (the envtest and kind providers bring it).
//   - Every wait has a named, scaled timeout (framework/intervals; $CLEANUP_E2E_WAIT_SCALE stretches
//     them all), and every variable the framework reads is in framework/envvar.
//
// # Packages for consumers
//
// suite, e2eframework, specs, deleteannotation (the front ends and spec libraries); testenv, stack,
// localruntime, cluster (the cluster under test and what runs on it); matchers, clusteroperator,
// hold, leftovers, mutate (matchers, finalizer holds, the leftovers report, mutation checks of your own
// cases); intervals, envvar (timeouts, variables); olm and kube (OLM and client helpers for cases of
// your own: installs, waits for a CSV's phase, WaitCRDsUsable); bundle (reading a registry-v1 bundle).
//
// Each front end links only what its suites run (deps_test.go): an operator repo's suite does not link
// the payload applier, a payload author's suite not OLM's spec library.
//
// # Internals
//
// The framework's own machinery, exported for its other packages and this repository's suites and
// scripts, not for your suite: they may change without a note in the docs. cluster/envtest,
// cluster/kind, cluster/existing (the providers: pick one with $CLEANUP_E2E_PROVIDER, not by
// importing it), toolchain and process (finding and starting the control plane's binaries, child
// processes), components and components/payloadapplier (installing the systems under test), artifacts and budget (a failed spec's
// dumps, the time budget), crashlog (why an operator exited), deletions (a recorder for this
// repository's safety tests), and everything under framework/internal.
package framework
