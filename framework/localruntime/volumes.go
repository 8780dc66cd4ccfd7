package localruntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"
)

type tokenRequester = corev1client.ServiceAccountsGetter

// mount is a volume (or a file of it, with subPath) written on the host, and where the container sees it.
type mount struct {
	source, target string
	readOnly       bool
}

// serviceAccountMountPath is where the ServiceAccount admission plugin mounts the pod's token, CA and
// namespace (rest.InClusterConfig and controller-runtime's leader election read them there).
const serviceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// tokenLifetime is what the runtime asks for a projected token: a kubelet asks for an hour and rotates
// it; the runtime does not rotate, so it asks for longer than any suite runs.
const tokenLifetime = 24 * 60 * 60

// materialize writes the volumes the container mounts under dir, plus the ServiceAccount volume the
// admission plugin would add, and returns the mounts. An unsupported volume is an error naming it.
func (r *Runtime) materialize(ctx context.Context, w *workload, dir string) ([]mount, error) {
	spec := w.dep.Spec.Template.Spec
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	written := map[string]string{}
	var mounts []mount
	for _, vm := range w.container.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			return nil, fmt.Errorf("container %s mounts volume %q, which the pod template does not define", w.container.Name, vm.Name)
		}
		src, ok := written[vm.Name]
		if !ok {
			src = filepath.Join(dir, "volumes", vm.Name)
			if err := r.writeVolume(ctx, w, v, src); err != nil {
				return nil, fmt.Errorf("volume %q of deployment %s/%s: %w", v.Name, w.dep.Namespace, w.dep.Name, err)
			}
			written[vm.Name] = src
		}
		if vm.SubPath != "" {
			src = filepath.Join(src, vm.SubPath)
		}
		mounts = append(mounts, mount{source: src, target: vm.MountPath, readOnly: vm.ReadOnly})
	}
	if automount(spec) && !mountsAt(mounts, serviceAccountMountPath) {
		src := filepath.Join(dir, "volumes", "kube-api-access")
		if err := r.writeServiceAccountVolume(ctx, w, src); err != nil {
			return nil, fmt.Errorf("the ServiceAccount token of deployment %s/%s: %w", w.dep.Namespace, w.dep.Name, err)
		}
		mounts = append(mounts, mount{source: src, target: serviceAccountMountPath, readOnly: true})
	}
	return mounts, nil
}

// automount is the pod's automountServiceAccountToken (the ServiceAccount's is not read: OLM's
// ServiceAccounts leave it unset, and so true).
func automount(spec corev1.PodSpec) bool {
	return spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken
}

func mountsAt(ms []mount, target string) bool {
	for _, m := range ms {
		if filepath.Clean(m.target) == target {
			return true
		}
	}
	return false
}

func (r *Runtime) writeVolume(ctx context.Context, w *workload, v corev1.Volume, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ns := w.dep.Namespace
	switch src := v.VolumeSource; {
	case src.EmptyDir != nil:
		return nil
	case src.Secret != nil:
		return r.writeSecret(ctx, ns, src.Secret.SecretName, src.Secret.Items, src.Secret.Optional, dir)
	case src.ConfigMap != nil:
		return r.writeConfigMap(ctx, ns, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, dir)
	case src.DownwardAPI != nil:
		return writeDownwardAPI(w, src.DownwardAPI.Items, dir)
	case src.Projected != nil:
		for _, p := range src.Projected.Sources {
			if err := r.writeProjection(ctx, w, p, dir); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("only secret, configMap, emptyDir, downwardAPI and projected volumes can be given to a " +
		"binary on this provider; run it on CLEANUP_E2E_PROVIDER=kind")
}

func (r *Runtime) writeProjection(ctx context.Context, w *workload, p corev1.VolumeProjection, dir string) error {
	ns := w.dep.Namespace
	switch {
	case p.Secret != nil:
		return r.writeSecret(ctx, ns, p.Secret.Name, p.Secret.Items, p.Secret.Optional, dir)
	case p.ConfigMap != nil:
		return r.writeConfigMap(ctx, ns, p.ConfigMap.Name, p.ConfigMap.Items, p.ConfigMap.Optional, dir)
	case p.DownwardAPI != nil:
		return writeDownwardAPI(w, p.DownwardAPI.Items, dir)
	case p.ServiceAccountToken != nil:
		var audiences []string
		if p.ServiceAccountToken.Audience != "" {
			audiences = []string{p.ServiceAccountToken.Audience}
		}
		token, err := r.token(ctx, ns, w.serviceAccount, audiences)
		if err != nil {
			return err
		}
		return writeFile(dir, p.ServiceAccountToken.Path, []byte(token))
	}
	return errors.New("a projected source other than secret, configMap, downwardAPI or serviceAccountToken")
}

// writeServiceAccountVolume writes what the kubelet projects for the ServiceAccount admission plugin's
// kube-api-access volume: a token for the pod's ServiceAccount, the cluster's CA and the namespace.
func (r *Runtime) writeServiceAccountVolume(ctx context.Context, w *workload, dir string) error {
	token, err := r.token(ctx, w.dep.Namespace, w.serviceAccount, nil)
	if err != nil {
		return err
	}
	ca := r.admin.CAData
	if len(ca) == 0 && r.admin.CAFile != "" {
		if ca, err = os.ReadFile(r.admin.CAFile); err != nil {
			return err
		}
	}
	for name, data := range map[string][]byte{"token": []byte(token), "ca.crt": ca, "namespace": []byte(w.dep.Namespace)} {
		if err := writeFile(dir, name, data); err != nil {
			return err
		}
	}
	return nil
}

// token asks the API server for a token of the ServiceAccount, as the kubelet does (TokenRequest).
func (r *Runtime) token(ctx context.Context, ns, sa string, audiences []string) (string, error) {
	tr, err := r.tokens.ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To[int64](tokenLifetime)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token for ServiceAccount %s/%s: %w", ns, sa, err)
	}
	return tr.Status.Token, nil
}

func (r *Runtime) writeSecret(ctx context.Context, ns, name string, items []corev1.KeyToPath, opt *bool, dir string) error {
	s := &corev1.Secret{}
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		return optional(opt, fmt.Errorf("secret %s: %w", name, err))
	}
	return writeKeys(s.Data, items, dir, "secret "+name)
}

func (r *Runtime) writeConfigMap(ctx context.Context, ns, name string, items []corev1.KeyToPath, opt *bool, dir string) error {
	cm := &corev1.ConfigMap{}
	if err := r.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm); err != nil {
		return optional(opt, fmt.Errorf("configmap %s: %w", name, err))
	}
	data := map[string][]byte{}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	return writeKeys(data, items, dir, "configmap "+name)
}

// writeKeys writes every key, or only the items (each to its path), as the kubelet does.
func writeKeys(data map[string][]byte, items []corev1.KeyToPath, dir, what string) error {
	if len(items) == 0 {
		for k, v := range data {
			if err := writeFile(dir, k, v); err != nil {
				return err
			}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("%s has no key %q", what, it.Key)
		}
		if err := writeFile(dir, it.Path, v); err != nil {
			return err
		}
	}
	return nil
}

func writeDownwardAPI(w *workload, items []corev1.DownwardAPIVolumeFile, dir string) error {
	for _, it := range items {
		if it.FieldRef == nil {
			return fmt.Errorf("downwardAPI item %s: only fieldRef is supported", it.Path)
		}
		v, err := resolveFieldRef(w.dep, w.serviceAccount, it.FieldRef.FieldPath)
		if err != nil {
			return fmt.Errorf("downwardAPI item %s: %w", it.Path, err)
		}
		if err := writeFile(dir, it.Path, []byte(v)); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(dir, rel string, data []byte) error {
	p := filepath.Join(dir, rel)
	if !strings.HasPrefix(p, filepath.Clean(dir)+string(filepath.Separator)) {
		return fmt.Errorf("path %q leaves its volume", rel)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// mountScript is the shell run inside the child's private mount namespace: each mount point is made
// (a directory, or a file for a subPath file) and the volume bind-mounted there, read-only when asked,
// then the binary replaces the shell ("$0" "$@"). Mount points that did not exist are created on the
// host's file system (empty, left in place: removing one could unmount it under another run).
func mountScript(ms []mount) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, m := range ms {
		src, dst := shellQuote(m.source), shellQuote(m.target)
		if st, err := os.Stat(m.source); err == nil && !st.IsDir() {
			fmt.Fprintf(&b, "mkdir -p %s && { [ -e %s ] || : > %s; }\n", shellQuote(filepath.Dir(m.target)), dst, dst)
		} else {
			fmt.Fprintf(&b, "mkdir -p %s\n", dst)
		}
		fmt.Fprintf(&b, "mount --bind %s %s\n", src, dst)
		if m.readOnly {
			fmt.Fprintf(&b, "mount -o remount,bind,ro %s\n", dst)
		}
	}
	b.WriteString(`exec "$0" "$@"` + "\n")
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func targets(ms []mount) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.target
	}
	return strings.Join(out, ", ")
}
