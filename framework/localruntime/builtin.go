package localruntime

import "sync"

// Built-in entrypoints are the images of the framework's own components (the operand-cleanup
// controller): a package that links the component registers it in its init (RegisterBuiltin), and
// the envtest provider's registry adds it for a stack that installs the component. So only a suite
// that runs the component links it (a payload suite never links the operand-cleanup controller).
var builtins sync.Map // image → Entrypoint

// RegisterBuiltin makes ep the entrypoint of a framework component's image.
func RegisterBuiltin(image string, ep Entrypoint) { builtins.Store(image, ep) }

// Builtin is the entrypoint a linked package registered for image.
func Builtin(image string) (Entrypoint, bool) {
	ep, ok := builtins.Load(image)
	if !ok {
		return nil, false
	}
	return ep.(Entrypoint), true
}
