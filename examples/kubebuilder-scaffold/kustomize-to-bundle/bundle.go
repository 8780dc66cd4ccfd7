package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Input is what the bundle is made from.
type Input struct {
	Package, Version, Image string
	// Default is `kustomize build config/default`; Samples `kustomize build config/samples`.
	Default, Samples []byte
}

// scaffoldImage is the image kubebuilder's config/manager names, which `make deploy IMG=...` and
// `make bundle IMG=...` replace (`kustomize edit set image controller=...`).
const scaffoldImage = "controller"

// Channel is the bundle's one channel.
const Channel = "alpha"

// Generate returns the bundle's files, keyed by their path under the bundle directory.
func Generate(in Input) (map[string][]byte, error) {
	objs, err := decode(in.Default)
	if err != nil {
		return nil, err
	}
	samples, err := decode(in.Samples)
	if err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	ver, err := semver.Parse(in.Version)
	if err != nil {
		return nil, fmt.Errorf("version: %w", err)
	}
	b := &builder{in: in, objs: objs, used: map[int]bool{}, files: map[string][]byte{}}
	csv := &operatorsv1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: operatorsv1alpha1.SchemeGroupVersion.String(), Kind: operatorsv1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      in.Package + ".v" + in.Version,
			Namespace: "placeholder",
			Annotations: map[string]string{
				"capabilities": "Basic Install",
				"operators.operatorframework.io/project_layout": "go.kubebuilder.io/v4",
			},
		},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName: in.Package,
			Description: in.Package + ", as kubebuilder scaffolded it.",
			Version:     version.OperatorVersion{Version: ver},
			Maturity:    Channel,
			Provider:    operatorsv1alpha1.AppLink{Name: "Provider Name"},
			Keywords:    []string{in.Package},
			// kubebuilder's main watches every namespace (it reads no WATCH_NAMESPACE).
			InstallModes: []operatorsv1alpha1.InstallMode{
				{Type: operatorsv1alpha1.InstallModeTypeOwnNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeSingleNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeMultiNamespace, Supported: false},
				{Type: operatorsv1alpha1.InstallModeTypeAllNamespaces, Supported: true},
			},
		},
	}
	strategy, err := b.installStrategy()
	if err != nil {
		return nil, err
	}
	csv.Spec.InstallStrategy = operatorsv1alpha1.NamedInstallStrategy{StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment, StrategySpec: *strategy}
	if csv.Spec.WebhookDefinitions, err = b.webhooks(strategy.DeploymentSpecs); err != nil {
		return nil, err
	}
	if csv.Spec.CustomResourceDefinitions.Owned, err = b.crds(); err != nil {
		return nil, err
	}
	if err := b.extras(); err != nil {
		return nil, err
	}
	examples := []map[string]any{}
	for _, s := range samples {
		s.SetNamespace("")
		examples = append(examples, s.Object)
	}
	alm, err := json.MarshalIndent(examples, "", "  ")
	if err != nil {
		return nil, err
	}
	csv.Annotations["alm-examples"] = string(alm)
	u := &unstructured.Unstructured{}
	if err := convert(csv, &u.Object); err != nil {
		return nil, err
	}
	unstructured.RemoveNestedField(u.Object, "status") // OLM's to write
	if err := b.addUnstructured("manifests/"+in.Package+".clusterserviceversion.yaml", u); err != nil {
		return nil, err
	}
	b.files["metadata/annotations.yaml"] = []byte(fmt.Sprintf(`annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: %s
  operators.operatorframework.io.bundle.channels.v1: %s
  operators.operatorframework.io.bundle.channel.default.v1: %s
`, in.Package, Channel, Channel))
	return b.files, nil
}

type builder struct {
	in    Input
	objs  []*unstructured.Unstructured
	used  map[int]bool // objects the CSV stands for (or that OLM replaces): not shipped as they are
	files map[string][]byte
}

// each calls f for every object of kind gk not used yet, with its index.
func (b *builder) each(gk schema.GroupKind, f func(i int, o *unstructured.Unstructured) error) error {
	for i, o := range b.objs {
		if !b.used[i] && o.GroupVersionKind().GroupKind() == gk {
			if err := f(i, o); err != nil {
				return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
	}
	return nil
}

// installStrategy: the Deployments, with the rules of the Roles and ClusterRoles bound to their
// ServiceAccounts. OLM creates the ServiceAccounts and binds those rules itself.
func (b *builder) installStrategy() (*operatorsv1alpha1.StrategyDetailsDeployment, error) {
	s := &operatorsv1alpha1.StrategyDetailsDeployment{}
	accounts := map[string]bool{}
	err := b.each(schema.GroupKind{Group: "apps", Kind: "Deployment"}, func(i int, o *unstructured.Unstructured) error {
		d := &appsv1.Deployment{}
		if err := convert(o, d); err != nil {
			return err
		}
		for j := range d.Spec.Template.Spec.Containers {
			c := &d.Spec.Template.Spec.Containers[j]
			if c.Image == scaffoldImage || strings.HasPrefix(c.Image, scaffoldImage+":") {
				c.Image = b.in.Image
			}
		}
		sa := d.Spec.Template.Spec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		accounts[sa] = true
		b.used[i] = true
		s.DeploymentSpecs = append(s.DeploymentSpecs, operatorsv1alpha1.StrategyDeploymentSpec{Name: d.Name, Spec: d.Spec, Label: d.Labels})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(s.DeploymentSpecs) == 0 {
		return nil, errors.New("no Deployment: is this `kustomize build config/default`?")
	}
	roles := map[schema.GroupKind]map[string]*unstructured.Unstructured{}
	for _, o := range b.objs {
		gk := o.GroupVersionKind().GroupKind()
		if gk.Group == rbacv1.GroupName && (gk.Kind == "Role" || gk.Kind == "ClusterRole") {
			if roles[gk] == nil {
				roles[gk] = map[string]*unstructured.Unstructured{}
			}
			roles[gk][o.GetName()] = o
		}
	}
	boundRoles := map[*unstructured.Unstructured]bool{}
	bind := func(into *[]operatorsv1alpha1.StrategyDeploymentPermissions) func(int, *unstructured.Unstructured) error {
		return func(i int, o *unstructured.Unstructured) error {
			binding := &rbacv1.RoleBinding{} // a ClusterRoleBinding has the same roleRef and subjects
			if err := convert(o, binding); err != nil {
				return err
			}
			var ours []string
			for _, sub := range binding.Subjects {
				if sub.Kind == rbacv1.ServiceAccountKind && accounts[sub.Name] {
					ours = append(ours, sub.Name)
				}
			}
			if len(ours) == 0 {
				return nil
			}
			if len(ours) != len(binding.Subjects) {
				return errors.New("binds the operator's ServiceAccount and other subjects: the CSV cannot say that")
			}
			role := roles[schema.GroupKind{Group: rbacv1.GroupName, Kind: binding.RoleRef.Kind}][binding.RoleRef.Name]
			if role == nil {
				return fmt.Errorf("its %s %s is not among the objects", binding.RoleRef.Kind, binding.RoleRef.Name)
			}
			rules := &rbacv1.ClusterRole{}
			if err := convert(role, rules); err != nil {
				return err
			}
			for _, sa := range ours {
				*into = addRules(*into, sa, rules.Rules)
			}
			b.used[i] = true
			boundRoles[role] = true
			return nil
		}
	}
	if err := b.each(schema.GroupKind{Group: rbacv1.GroupName, Kind: "RoleBinding"}, bind(&s.Permissions)); err != nil {
		return nil, err
	}
	if err := b.each(schema.GroupKind{Group: rbacv1.GroupName, Kind: "ClusterRoleBinding"}, bind(&s.ClusterPermissions)); err != nil {
		return nil, err
	}
	for i, o := range b.objs {
		gk := o.GroupVersionKind().GroupKind()
		switch {
		case boundRoles[o]:
			b.used[i] = true
		case gk == schema.GroupKind{Kind: "ServiceAccount"} && accounts[o.GetName()],
			gk == schema.GroupKind{Kind: "Namespace"},
			gk.Group == "cert-manager.io": // OLM makes the webhook's certificate
			b.used[i] = true
		}
	}
	return s, nil
}

func addRules(perms []operatorsv1alpha1.StrategyDeploymentPermissions, sa string, rules []rbacv1.PolicyRule) []operatorsv1alpha1.StrategyDeploymentPermissions {
	for i := range perms {
		if perms[i].ServiceAccountName == sa {
			perms[i].Rules = append(perms[i].Rules, rules...)
			return perms
		}
	}
	return append(perms, operatorsv1alpha1.StrategyDeploymentPermissions{ServiceAccountName: sa, Rules: rules})
}

// webhooks: each webhook of the configurations, served by the Deployment its Service selects. The
// Service is dropped: OLM makes <deployment>-service with a certificate of its own.
func (b *builder) webhooks(deployments []operatorsv1alpha1.StrategyDeploymentSpec) ([]operatorsv1alpha1.WebhookDescription, error) {
	var out []operatorsv1alpha1.WebhookDescription
	describe := func(typ operatorsv1alpha1.WebhookAdmissionType, name string, cc admissionregistrationv1.WebhookClientConfig) (*operatorsv1alpha1.WebhookDescription, error) {
		if cc.Service == nil {
			return nil, fmt.Errorf("webhook %s calls a URL, not a Service of the operator", name)
		}
		i, svc, err := b.service(cc.Service.Name)
		if err != nil {
			return nil, fmt.Errorf("webhook %s: %w", name, err)
		}
		b.used[i] = true
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		var target *intstr.IntOrString
		for _, p := range svc.Spec.Ports {
			if p.Port == port {
				t := p.TargetPort
				target = &t
			}
		}
		deployment := ""
		for _, d := range deployments {
			if len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				deployment = d.Name
			}
		}
		if deployment == "" {
			return nil, fmt.Errorf("webhook %s: no Deployment matches the selector of Service %s", name, svc.Name)
		}
		return &operatorsv1alpha1.WebhookDescription{GenerateName: name, Type: typ, DeploymentName: deployment,
			ContainerPort: port, TargetPort: target, WebhookPath: cc.Service.Path}, nil
	}
	err := b.each(schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "ValidatingWebhookConfiguration"}, func(i int, o *unstructured.Unstructured) error {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := convert(o, c); err != nil {
			return err
		}
		for _, w := range c.Webhooks {
			d, err := describe(operatorsv1alpha1.ValidatingAdmissionWebhook, w.Name, w.ClientConfig)
			if err != nil {
				return err
			}
			d.Rules, d.FailurePolicy, d.MatchPolicy, d.ObjectSelector, d.SideEffects, d.TimeoutSeconds, d.AdmissionReviewVersions =
				w.Rules, w.FailurePolicy, w.MatchPolicy, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions
			out = append(out, *d)
		}
		b.used[i] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = b.each(schema.GroupKind{Group: admissionregistrationv1.GroupName, Kind: "MutatingWebhookConfiguration"}, func(i int, o *unstructured.Unstructured) error {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := convert(o, c); err != nil {
			return err
		}
		for _, w := range c.Webhooks {
			d, err := describe(operatorsv1alpha1.MutatingAdmissionWebhook, w.Name, w.ClientConfig)
			if err != nil {
				return err
			}
			d.Rules, d.FailurePolicy, d.MatchPolicy, d.ObjectSelector, d.SideEffects, d.TimeoutSeconds, d.AdmissionReviewVersions, d.ReinvocationPolicy =
				w.Rules, w.FailurePolicy, w.MatchPolicy, w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.ReinvocationPolicy
			out = append(out, *d)
		}
		b.used[i] = true
		return nil
	})
	return out, err
}

func (b *builder) service(name string) (int, *corev1.Service, error) {
	for i, o := range b.objs {
		if o.GroupVersionKind().GroupKind() == (schema.GroupKind{Kind: "Service"}) && o.GetName() == name {
			svc := &corev1.Service{}
			return i, svc, convert(o, svc)
		}
	}
	return 0, nil, fmt.Errorf("its Service %s is not among the objects", name)
}

// crds: every CRD, written as operator-sdk names it (<group>_<plural>.yaml) and owned by the CSV.
func (b *builder) crds() ([]operatorsv1alpha1.CRDDescription, error) {
	var owned []operatorsv1alpha1.CRDDescription
	err := b.each(schema.GroupKind{Group: apiextensionsv1.GroupName, Kind: "CustomResourceDefinition"}, func(i int, o *unstructured.Unstructured) error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := convert(o, crd); err != nil {
			return err
		}
		if c := crd.Spec.Conversion; c != nil && c.Strategy == apiextensionsv1.WebhookConverter {
			return errors.New("a conversion webhook: not supported by this generator")
		}
		for _, v := range crd.Spec.Versions {
			d := operatorsv1alpha1.CRDDescription{Name: crd.Name, Version: v.Name, Kind: crd.Spec.Names.Kind, DisplayName: crd.Spec.Names.Kind}
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				d.Description = v.Schema.OpenAPIV3Schema.Description
			}
			owned = append(owned, d)
		}
		b.used[i] = true
		o.SetNamespace("")
		return b.addUnstructured("manifests/"+crd.Spec.Group+"_"+crd.Spec.Names.Plural+".yaml", o)
	})
	return owned, err
}

// extras: what the CSV does not stand for ships as it is (OLM installs a bundle's Services,
// ClusterRoles, ServiceMonitors, ... in the install namespace), named as operator-sdk names it.
func (b *builder) extras() error {
	for i, o := range b.objs {
		if b.used[i] {
			continue
		}
		gvk := o.GroupVersionKind()
		gv := strings.ReplaceAll(gvk.GroupVersion().String(), "/", "_")
		o.SetNamespace("")
		if err := b.addUnstructured("manifests/"+o.GetName()+"_"+gv+"_"+strings.ToLower(gvk.Kind)+".yaml", o); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) add(path string, obj any) error {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	if _, dup := b.files[path]; dup {
		return fmt.Errorf("two objects would be written to %s", path)
	}
	b.files[path] = data
	return nil
}

func (b *builder) addUnstructured(path string, o *unstructured.Unstructured) error {
	return b.add(path, o.Object)
}

// decode reads a stream of YAML documents; empty ones are skipped.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &o.Object); err != nil {
			return nil, err
		}
		if len(o.Object) > 0 {
			objs = append(objs, o)
		}
	}
}

// convert copies from into into through JSON (an Unstructured as its object).
func convert(from, into any) error {
	if u, ok := from.(*unstructured.Unstructured); ok {
		from = u.Object
	}
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

// Write replaces dir with the files.
func Write(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return err
		}
	}
	return nil
}
