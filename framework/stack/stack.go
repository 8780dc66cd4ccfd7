package stack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crdconfig "github.com/cleanup-e2e/cleanup-e2e/config/crd"
	"github.com/cleanup-e2e/cleanup-e2e/framework/intervals"
)

// Components is what must run on the cluster. The zero value needs nothing.
type Components struct {
	// OLM requires OLM's CRDs and a reconciling olm-operator (never installed; see the package doc).
	OLM bool
	// OLMv1 requires OLM v1 (operator-controller, catalogd: their CRDs) and a registry the specs push
	// test bundles to (olmv1.RegistryConfigMap). Never installed: the envtest and kind providers bring
	// their own when it is set (framework/testenv).
	OLMv1 bool
	// OperandCleanup ensures the operand-cleanup controller (config/operand-cleanup).
	OperandCleanup bool
	// OperandCleanupImage is the controller's image when this stack installs it (default
	// cleanup-e2e.local/operand-cleanup:v0.1.0, which no registry serves: kind loads it, envtest runs
	// it in-process). On an existing cluster whose nodes pull from a registry, push the image
	// scripts/images.sh builds there and name it here.
	OperandCleanupImage string
	// OperandCleanupArgs override the controller's flags when this stack installs it (e.g.
	// "--stall-timeout=5s"); a controller that was already there is left as it is. The stack installs
	// it with --max-pending-listed=10 unless these say otherwise (see testArgs).
	OperandCleanupArgs []string
	// ClusterOperatorCRD ensures config.openshift.io's ClusterOperator CRD (config/crd), for CVO-style
	// payloads. olm-operator treats a cluster serving config.openshift.io as OpenShift and, once
	// restarted, waits for a Proxy API such a cluster lacks (Disruptive): RemoveDisruptive, or else
	// Teardown, removes the CRD if the run made it.
	ClusterOperatorCRD bool
	// CRDs are further CRDs the suite needs before its specs run (created when missing, never changed).
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Footprint is what the specs leave on purpose; Teardown removes what of it the run created.
	Footprint Footprint
}

// Disruptive names what of the components changes the cluster for everyone while it is there, so that
// a shared cluster's runs keep clear of it (framework/testenv's disruptive lock): the ClusterOperator
// CRD. Everything else only adds objects other runs may use too.
func (c Components) Disruptive() []string {
	if c.ClusterOperatorCRD {
		return []string{"the ClusterOperator CRD (config.openshift.io/v1: a restarted olm-operator takes the cluster for OpenShift)"}
	}
	return nil
}

// ForOperandCleanup is what an operator's uninstall specs need: OLM and the operand-cleanup controller.
func ForOperandCleanup() Components { return Components{OLM: true, OperandCleanup: true} }

// ForOLMv1Uninstall is what an operator's OLM v1 uninstall specs need: OLM v1 and the operand-cleanup
// controller (its ordered uninstall of a ClusterExtension), which needs OLM v0's API too.
func ForOLMv1Uninstall() Components { return Components{OLM: true, OLMv1: true, OperandCleanup: true} }

// ForPayloads is what the payload applier's specs need: the ClusterOperator CRD, no OLM.
func ForPayloads() Components { return Components{ClusterOperatorCRD: true} }

// Input configures Ensure.
type Input struct {
	Components
	// Client is an admin client of the cluster (its scheme needs the built-in types and CRDs).
	Client client.Client
	// Timeout bounds each wait (default: intervals.DeploymentAvailable).
	Timeout time.Duration
	// Log reports what was found, installed and removed.
	Log logr.Logger
}

// Found is what Ensure found on the cluster before installing anything.
type Found struct {
	// OLMNamespaces are where olm-operator / catalog-operator Deployments were seen (when listable).
	OLMNamespaces []string
	// OperandCleanup is true when the operand-cleanup controller's Deployment was already there.
	OperandCleanup bool
	// ClusterOperatorCRD is true when the ClusterOperator CRD was already there.
	ClusterOperatorCRD bool
}

// Stack is what runs on the cluster for the specs, and what of it this run created.
type Stack struct {
	in     Input
	c      client.Client
	found  Found
	ledger *ledger
	// footprint: which of Components.Footprint existed at Ensure.
	footprint map[string]bool

	teardownOnce sync.Once
	teardownErr  error
}

// Ensure detects each component, installs what is missing and records it. On error,
// what it created so far is removed again.
func Ensure(ctx context.Context, in Input) (_ *Stack, err error) {
	if in.Client == nil {
		return nil, errors.New("stack.Input.Client is nil: pass an admin client of the cluster")
	}
	in.Timeout = intervals.Or(in.Timeout, intervals.DeploymentAvailable)
	if in.Log.GetSink() == nil {
		in.Log = logr.Discard()
	}
	s := &Stack{in: in, c: in.Client, ledger: &ledger{c: in.Client, log: in.Log, timeout: in.Timeout}}
	defer func() {
		if err != nil {
			// Only what this Ensure created goes: the footprint is what the specs of every run on the
			// cluster create, and other runs are alive now (only Stop, as the last run alive, removes it).
			s.footprint = nil
			if terr := s.Teardown(context.WithoutCancel(ctx)); terr != nil {
				err = fmt.Errorf("%w (and removing what was created so far: %v)", err, terr)
			}
		}
	}()
	if s.footprint, err = footprintBefore(ctx, s.c, in.Footprint); err != nil {
		return nil, err
	}
	if in.OLM {
		if err := s.step(ctx, "OLM", s.requireOLM); err != nil {
			return nil, err
		}
	}
	if in.OLMv1 {
		if err := s.step(ctx, "OLM v1", s.requireOLMv1); err != nil {
			return nil, err
		}
	}
	if in.ClusterOperatorCRD {
		crd, err := crdconfig.ClusterOperator()
		if err != nil {
			return nil, err
		}
		if err := s.step(ctx, "ClusterOperator CRD", func(ctx context.Context) (err error) {
			s.found.ClusterOperatorCRD, err = s.ensureCRDs(ctx, []*apiextensionsv1.CustomResourceDefinition{crd})
			return err
		}); err != nil {
			return nil, err
		}
	}
	if len(in.CRDs) > 0 {
		if err := s.step(ctx, "CRDs", func(ctx context.Context) error { _, err := s.ensureCRDs(ctx, in.CRDs); return err }); err != nil {
			return nil, err
		}
	}
	if in.OperandCleanup {
		if err := s.step(ctx, "operand-cleanup controller", func(ctx context.Context) (err error) {
			s.found.OperandCleanup, err = s.ensureOperandCleanup(ctx)
			return err
		}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Stack) step(ctx context.Context, what string, fn func(context.Context) error) error {
	start := time.Now()
	if err := fn(ctx); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	s.in.Log.Info("stack: "+what+" ready", "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// Found is what Ensure found before installing anything.
func (s *Stack) Found() Found { return s.found }

// Created lists what this stack created ("Kind namespace/name"), in creation order.
func (s *Stack) Created() []string { return s.ledger.created() }

// Teardown removes the footprint the run created, then everything the stack created, newest first,
// each only while it is the same object (UID), and waits until they are gone. Idempotent.
//
// One wait for both: each namespace takes ≥ 5 s to go (kube-controller-manager's
// namespaceDeletionGracePeriod), so waiting for the footprint before deleting the stack's own
// objects cost a run that owns both ≈ 5 s more as the last run alive. Nothing the stack creates
// finalizes what the footprint holds (CRDs the bundles brought, namespaces the operators made), so
// neither waits for the other.
func (s *Stack) Teardown(ctx context.Context) error {
	s.teardownOnce.Do(func() {
		var errs []error
		var leftovers []entry
		if s.footprint != nil {
			var err error
			leftovers, err = footprintCreated(ctx, s.c, s.in.Footprint, s.footprint)
			errs = append(errs, err)
		}
		s.ledger.mu.Lock()
		created := append([]entry{}, s.ledger.entries...)
		s.ledger.mu.Unlock()
		// remove deletes newest first: the footprint, last in the list, goes first.
		if all := append(append([]entry{}, created...), leftovers...); len(all) > 0 {
			errs = append(errs, s.ledger.remove(ctx, all))
		}
		if len(leftovers) > 0 {
			s.in.Log.Info("removed what the specs left on the cluster (created during the run)", "objects", names(leftovers))
		}
		if len(created) > 0 {
			s.in.Log.Info("removed what the stack created", "objects", names(created))
		}
		s.teardownErr = errors.Join(errs...)
	})
	return s.teardownErr
}

// RemoveDisruptive removes what of Components.Disruptive the stack created (the ClusterOperator CRD),
// at once and before Teardown, and waits until it is gone: on a shared cluster other runs must not
// restart OLM while it is there, and they may still be running. Teardown then skips it. Idempotent.
func (s *Stack) RemoveDisruptive(ctx context.Context) error {
	if !s.in.ClusterOperatorCRD {
		return nil
	}
	crd, err := crdconfig.ClusterOperator()
	if err != nil {
		return err
	}
	s.ledger.mu.Lock()
	var disruptive []entry
	kept := s.ledger.entries[:0:0]
	for _, e := range s.ledger.entries {
		if e.gvk.Kind == "CustomResourceDefinition" && e.name == crd.Name {
			disruptive = append(disruptive, e)
		} else {
			kept = append(kept, e)
		}
	}
	s.ledger.entries = kept
	s.ledger.mu.Unlock()
	if len(disruptive) == 0 {
		return nil
	}
	if err := s.ledger.remove(ctx, disruptive); err != nil {
		return err
	}
	s.in.Log.Info("removed what the stack created that changes the cluster for other runs", "objects", names(disruptive))
	return nil
}

func names(entries []entry) string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.String()
	}
	return strings.Join(out, ", ")
}
