// Command payload-applier applies a CVO-style release payload:
//
//	payload-applier --payload DIR --mode install|update|reconcile [--interval 30s]
//
// It only wires a logger, signals and the kubeconfig to applier.Main (docs/CONTRACTS.md).
package main

import (
	"os"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload/applier"
)

func main() {
	log := zap.New()
	ctx := logr.NewContext(ctrl.SetupSignalHandler(), log)
	if err := applier.Main(ctx, ctrl.GetConfigOrDie(), os.Args[1:], os.Getenv); err != nil {
		log.Error(err, "payload-applier failed")
		os.Exit(1)
	}
}
