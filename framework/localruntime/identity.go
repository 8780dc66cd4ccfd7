package localruntime

import (
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
)

// operatorConfig is the rest.Config an operator gets: it acts as its Deployment's ServiceAccount and
// its clients say which Deployment and image they run for (an operator may set its own user agent).
func (r *Runtime) operatorConfig(key types.NamespacedName, w *workload) *rest.Config {
	cfg := r.impersonating(key.Namespace, w.serviceAccount)
	cfg.UserAgent = operatorUserAgent(key, w.image)
	return cfg
}

// impersonating returns a config that acts as the ServiceAccount, with the groups the token
// authenticator would give it.
func (r *Runtime) impersonating(ns, sa string) *rest.Config {
	cfg := rest.CopyConfig(r.admin)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: serviceaccount.MakeUsername(ns, sa),
		Groups:   append(serviceaccount.MakeGroupNames(ns), "system:authenticated"),
	}
	return cfg
}

// operatorUserAgent names the operator, e.g. "widget-operator:v0.1.0 (deployment widget-operator in
// namespace ops)". Without it every in-process operator sends the test binary's user agent, and the
// API server makes a client's field manager of that, so managedFields and the leftovers report's
// "who" named the test binary. The server cuts the field manager at the first "/": the image keeps
// only its last path element and the namespace is spelled out, so the whole text is the manager.
func operatorUserAgent(key types.NamespacedName, image string) string {
	return fmt.Sprintf("%s (deployment %s in namespace %s)", path.Base(image), key.Name, key.Namespace)
}
