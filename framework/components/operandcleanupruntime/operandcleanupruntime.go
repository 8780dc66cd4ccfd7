// Package operandcleanupruntime lets the envtest provider run the operand-cleanup controller
// (pkg/operandcleanup) in-process: importing it registers the controller's image as a built-in of
// framework/localruntime. framework/specs imports it, so an operator repo's suite has it; a suite of
// its own that needs Stack.OperandCleanup without the spec library imports it for its side effect.
package operandcleanupruntime

import (
	"github.com/cleanup-e2e/cleanup-e2e/framework/components"
	"github.com/cleanup-e2e/cleanup-e2e/framework/localruntime"
	"github.com/cleanup-e2e/cleanup-e2e/pkg/operandcleanup"
)

func init() { localruntime.RegisterBuiltin(components.OperandCleanupImage, operandcleanup.Main) }
