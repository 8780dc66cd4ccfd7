// Package localruntime stands in for the kubelet on clusters without nodes (the envtest provider).
//
// When a Deployment appears whose container image is registered (image reference → Go entrypoint), the
// runtime runs that operator in-process with the pod template's args and env, authenticated as the
// Deployment's ServiceAccount through impersonation so RBAC applies for real (its user agent, and so
// its field manager, names the image and Deployment unless it sets its own), and writes the Deployment
// status the way the deployment controller would: Available once the operator runs and, when the
// container has an HTTP readiness probe, answers it (on a health address the runtime hands out). It
// stops the operator when the Deployment is deleted, scaled to zero or rolled to another image; an
// entrypoint that returns an error is restarted with back-off, like a crash-looping container.
// Unregistered images stay unavailable with one log line saying why.
package localruntime
