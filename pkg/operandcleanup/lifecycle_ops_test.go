package operandcleanup

import (
	"sort"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/extensioncleanup"
)

// do performs one operation on the API server, as the user, the simulated OLM or the operator would.
// The model has already accepted it (its precondition holds).
func (r *lifecycleRun) do(o lifecycleOp) {
	opNS := r.ns["op"]
	switch o.Kind {
	case opInstall, opInstallEnabled:
		r.createCSV("op.v1", "", v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonInstallSuccessful, o.Kind == opInstallEnabled)
	case opUpgrade:
		r.createCSV(o.To, o.From, v1alpha1.CSVPhasePending, v1alpha1.CSVReasonRequirementsUnknown, false)
		setPhase(r.csvObj(o.From), v1alpha1.CSVPhaseReplacing, v1alpha1.CSVReasonBeingReplaced)
		if r.model.csvs[o.To].enabled {
			// The hand-over is asynchronous: wait for it, so the user's later choices are well defined.
			key := types.NamespacedName{Namespace: opNS, Name: o.To}
			if !r.within(15*time.Second, func() bool { c := getCSV(key); return c == nil || c.Spec.Cleanup.Enabled }) {
				r.violate("upgrade %s -> %s: the opt-in was not handed over to %s", o.From, o.To, o.To)
			}
		}
	case opSucceed:
		to := r.model.csvs[o.To]
		setPhase(r.csvObj(o.To), v1alpha1.CSVPhaseSucceeded, v1alpha1.CSVReasonInstallSuccessful)
		if p := r.model.csvs[to.replaces]; p != nil && p.phase == "Deleting" {
			prev := r.csvObj(to.replaces)
			setPhase(prev, v1alpha1.CSVPhaseDeleting, v1alpha1.CSVReasonReplaced)
			Expect(client.IgnoreNotFound(tenv.admin.Delete(ctx, prev))).To(Succeed())
		}
	case opOLM:
		r.simulateOLM()
	case opDeleteCSV:
		Expect(client.IgnoreNotFound(tenv.admin.Delete(ctx, r.csvObj(o.Name)))).To(Succeed())
	case opToggle:
		want := r.model.csvs[o.Name].enabled
		if !want && r.model.csvs[o.Name].deleting {
			r.aborts = append(r.aborts, time.Now())
		}
		r.editCSV(types.NamespacedName{Namespace: opNS, Name: o.Name}, func(c *v1alpha1.ClusterServiceVersion) { c.Spec.Cleanup.Enabled = want })
	case opCreateOperand:
		var fin []string
		if o.Held {
			fin = []string{testFinalizer}
		}
		Expect(client.IgnoreAlreadyExists(tenv.admin.Create(ctx, newOperand(lifecycleKind, r.ns[o.NS], o.Name, fin...)))).To(Succeed())
	case opDeleteOperand:
		u := newOperand(lifecycleKind, r.ns[o.NS], o.Name)
		if err := tenv.admin.Get(ctx, client.ObjectKeyFromObject(u), u); err == nil {
			r.userDelete[u.GetUID()] = true
			Expect(client.IgnoreNotFound(tenv.admin.Delete(ctx, u, client.Preconditions{UID: ptrTo(u.GetUID())}))).To(Succeed())
		}
	case opRelease:
		// Each installation's operator finalizes where it watches, while it runs (ours: until the last
		// CSV goes with its Deployment).
		other := r.model.other
		if r.model.otherUnplaced {
			other = nil // its operator does not run yet
		}
		if r.model.extension {
			other = []string{"*"} // the extension's operator watches every namespace
		}
		for _, scope := range [][]string{r.ourOperatorWatches(), other} {
			if scope != nil && o.NS != "" {
				scope = intersectSyms(scope, []string{o.NS})
			}
			if len(scope) > 0 {
				r.releaseDeletingGears(scope)
			}
		}
	case opInstallOther:
		createCSV(r.ns["op2"], "other.v1", targetNamespaces(r.realTargets(r.model.other)), owns(lifecycleKind))
	case opInstallOtherUnplaced:
		createCSVWithStatus(r.ns["op2"], "other.v1", v1alpha1.CSVPhaseNone, "", owns(lifecycleKind))
	case opPlaceOther:
		r.editCSV(types.NamespacedName{Namespace: r.ns["op2"], Name: "other.v1"}, targetNamespaces(r.realTargets(r.model.other)))
	case opDeleteOther:
		Expect(client.IgnoreNotFound(tenv.admin.Delete(ctx, &v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns["op2"], Name: "other.v1"}}))).To(Succeed())
	case opExtensionClaim, opExtensionRelease:
		setExtensionClaim(o.Kind == opExtensionClaim)
	case opRetarget:
		for _, c := range r.liveCSVs() {
			r.editCSV(keyOf(&c), targetNamespaces(r.realTargets(r.model.targets)))
		}
		r.syncDeployment()
	case opRestart:
		restartController(func() {})
	case opDeleteCopy:
		cp := &v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns[o.NS], Name: o.Name}}
		Expect(client.IgnoreNotFound(tenv.admin.Delete(ctx, cp))).To(Succeed())
	}
}

func ptrTo[T any](v T) *T { return &v }

func (r *lifecycleRun) csvObj(name string) *v1alpha1.ClusterServiceVersion {
	return &v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns["op"], Name: name}}
}

// realTargets is the olm.targetNamespaces value of the symbolic targets syms.
func (r *lifecycleRun) realTargets(syms []string) string {
	if syms[0] == "*" {
		return ""
	}
	var out []string
	for _, s := range syms {
		out = append(out, r.ns[s])
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// createCSV makes a CSV as OLM would (its finalizer, the targets annotation, the status), the cluster RBAC
// OLM makes for it, and, for operators that are not global, its copies and Roles in the other targets.
func (r *lifecycleRun) createCSV(name, replacesName string, phase v1alpha1.ClusterServiceVersionPhase, reason v1alpha1.ConditionReason, enabled bool) {
	opts := []csvOpt{targetNamespaces(r.realTargets(r.model.targets)), owns(lifecycleKind), cleanupEnabled(enabled),
		func(c *v1alpha1.ClusterServiceVersion) { c.Finalizers = []string{olmFinalizer} }}
	if replacesName != "" {
		opts = append(opts, replaces(replacesName))
	}
	csv := createCSVWithStatus(r.ns["op"], name, phase, reason, opts...)
	// Named after the CSV's UID: a reinstalled CSV of the same name must not meet its predecessor's
	// ClusterRole while that one finishes terminating.
	labelledClusterRBAC(csv.Namespace+"-"+string(csv.UID), olmOwnerLabels(csv.Namespace, csv.Name), csv.Namespace, "operator")
	r.syncDeployment()
	if r.realTargets(r.model.targets) == "" {
		return
	}
	for _, t := range r.model.targets {
		if t == "op" {
			continue
		}
		olmTargetRBAC(csv, r.ns[t])
		cp := &v1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns[t], Name: name,
			Labels: map[string]string{v1alpha1.CopiedLabelKey: r.ns["op"]}}}
		cp.Spec = *csv.Spec.DeepCopy()
		Expect(client.IgnoreAlreadyExists(tenv.admin.Create(ctx, cp))).To(Succeed())
	}
}

// simulateOLM does what olm-operator does for deleted CSVs: their cluster RBAC goes at once, then its
// finalizer; copies whose parent is gone are deleted.
func (r *lifecycleRun) simulateOLM() {
	live := map[string]bool{}
	for _, c := range r.liveCSVs() {
		live[c.Name] = true
		if !isDeleting(&c) {
			continue
		}
		sel := client.MatchingLabels(olmOwnerLabels(c.Namespace, c.Name))
		Expect(tenv.admin.DeleteAllOf(ctx, &rbacv1.ClusterRoleBinding{}, sel)).To(Succeed())
		Expect(tenv.admin.DeleteAllOf(ctx, &rbacv1.ClusterRole{}, sel)).To(Succeed())
		if controllerutil.ContainsFinalizer(&c, olmFinalizer) {
			r.editCSV(keyOf(&c), func(cur *v1alpha1.ClusterServiceVersion) { controllerutil.RemoveFinalizer(cur, olmFinalizer) })
		}
	}
	for _, t := range []string{"t1", "t2"} {
		copies := &v1alpha1.ClusterServiceVersionList{}
		Expect(tenv.admin.List(ctx, copies, client.InNamespace(r.ns[t]))).To(Succeed())
		for i := range copies.Items {
			if !live[copies.Items[i].Name] {
				Expect(client.IgnoreNotFound(tenv.admin.Delete(ctx, &copies.Items[i]))).To(Succeed())
			}
		}
	}
}

// editCSV is a read-modify-write that tolerates the CSV being gone.
func (r *lifecycleRun) editCSV(key types.NamespacedName, mutate func(*v1alpha1.ClusterServiceVersion)) {
	Eventually(func() error {
		c := &v1alpha1.ClusterServiceVersion{}
		if err := tenv.admin.Get(ctx, key, c); err != nil {
			return client.IgnoreNotFound(err)
		}
		mutate(c)
		err := tenv.admin.Update(ctx, c)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}).Should(Succeed())
}

// ourOperatorWatches is where the operator of the sequence's installation finalizes: nowhere once its
// last CSV is gone.
func (r *lifecycleRun) ourOperatorWatches() []string {
	if len(r.liveCSVs()) == 0 {
		return nil
	}
	return r.model.watched
}

// syncDeployment writes the namespaces the operator watches (model.watched) to its Deployment's pod
// template, as OLM merges olm.targetNamespaces into it.
func (r *lifecycleRun) syncDeployment() {
	want := r.realTargets(r.model.watched)
	ensureOperatorDeployment(r.ns["op"])
	Eventually(func() error {
		d := operatorDeployment(r.ns["op"])
		if v, ok := d.Spec.Template.Annotations[targetNamespacesAnno]; ok && v == want {
			return nil
		}
		metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, targetNamespacesAnno, want)
		return tenv.admin.Update(ctx, d)
	}).Should(Succeed())
}

// releaseDeletingGears removes the operator's finalizer from every Gear being deleted in the symbolic
// namespaces syms ("*": all of them).
func (r *lifecycleRun) releaseDeletingGears(syms []string) {
	if len(syms) > 0 && syms[0] == "*" {
		syms = []string{"op", "t1", "t2", "out"}
	}
	for _, s := range syms {
		for _, u := range r.gears(s) {
			if u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) > 0 {
				releaseOperands(&u)
			}
		}
	}
}

// setExtensionClaim gives the Gear CRD operator-controller's controller reference to a ClusterExtension,
// or takes it away. No garbage collector runs in this suite, so the ClusterExtension need not exist.
func setExtensionClaim(claim bool) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	Eventually(func() error {
		if err := tenv.admin.Get(ctx, types.NamespacedName{Name: lifecycleKind.crdName()}, crd); err != nil {
			return err
		}
		crd.OwnerReferences = nil
		if claim {
			crd.OwnerReferences = []metav1.OwnerReference{{APIVersion: extensioncleanup.ClusterExtensionGVK.GroupVersion().String(),
				Kind: extensioncleanup.ClusterExtensionGVK.Kind, Name: "gears", UID: "00000000-0000-0000-0000-00000000ce01", Controller: ptrTo(true)}}
		}
		return tenv.admin.Update(ctx, crd)
	}).Should(Succeed(), "setting the Gear CRD's ClusterExtension reference to %t", claim)
}
