// Command fixture-operator runs one fixture operator: `fixture-operator <widget|gizmo|stack> [flags]`.
// Every fixture image is this binary; the CSV's container command picks the subcommand and its args
// are the operator's flags. It only wires a logger, signals and the kubeconfig to the operator's Main.
package main

import (
	"fmt"
	"os"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cleanup-e2e/cleanup-e2e/fixtures"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "usage: %s <operator> [flags]\noperators: %s\n", os.Args[0], fixtures.Subcommands())
		os.Exit(2)
	}
	op, ok := fixtures.OperatorBySubcommand(os.Args[1])
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown operator %q; one of: %s\n", os.Args[1], fixtures.Subcommands())
		os.Exit(2)
	}

	log := zap.New() // Main names it after the operator
	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "loading the kubeconfig")
		os.Exit(1)
	}
	ctx := logr.NewContext(ctrl.SetupSignalHandler(), log)
	if err := op.Main(ctx, cfg, os.Args[2:], os.Getenv); err != nil {
		log.Error(err, "operator failed")
		os.Exit(1)
	}
}
