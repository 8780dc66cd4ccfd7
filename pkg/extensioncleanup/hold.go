package extensioncleanup

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The objects an opted-in extension's uninstall keeps until it is over: what the operator needs to run
// its finalizers (its Deployment, ServiceAccount and RBAC), the CRDs (deleting one deletes every CR of
// its kind at once) and the helm release (selectorFor). The bundle's Services, ConfigMaps and Secrets
// are not held.
var (
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	crdGVK        = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	heldKinds     = []schema.GroupVersionKind{
		deploymentGVK,
		{Version: "v1", Kind: "ServiceAccount"},
		{Group: rbacv1.GroupName, Version: "v1", Kind: "ClusterRole"},
		{Group: rbacv1.GroupName, Version: "v1", Kind: "ClusterRoleBinding"},
		{Group: rbacv1.GroupName, Version: "v1", Kind: "Role"},
		{Group: rbacv1.GroupName, Version: "v1", Kind: "RoleBinding"},
		crdGVK,
		secretGVK,
	}
	secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

// selectorFor is how operator-controller labels kind for the ClusterExtension name: the installed
// objects by its post-renderer's owner labels; the helm release's index Secret (in the system namespace)
// by helm-operator-plugins' chunked storage labels (pkg/storage/labels.go). The release is held so that
// operator-controller, which keeps reconciling a deleted ClusterExtension, never finds it gone after a
// foreground deletion and installs the release again over the held objects (an adopting helm install
// rewrites their owner references).
func selectorFor(gvk schema.GroupVersionKind, name string) labels.Selector {
	if gvk == secretGVK {
		return labels.SelectorFromSet(labels.Set{"name": name, "type": "index"})
	}
	return labels.SelectorFromSet(labels.Set{ownerKindLabel: ClusterExtensionGVK.Kind, OwnerNameLabel: name})
}

// holder is the live holder ClusterRole's owner reference (never a controller, never blocking: the
// holder is not deleted in foreground, and blockOwnerDeletion would need its finalizers permission).
func (r *Reconciler) holder(ctx context.Context) (metav1.OwnerReference, error) {
	cr := &metav1.PartialObjectMetadata{}
	cr.SetGroupVersionKind(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"))
	if err := r.live.Get(ctx, types.NamespacedName{Name: r.opts.HolderName}, cr); err != nil {
		if apierrors.IsNotFound(err) {
			return metav1.OwnerReference{}, fmt.Errorf("the holder ClusterRole %s does not exist: install the controller from config/operand-cleanup (its ClusterRole is the holder), or create a ClusterRole of that name", r.opts.HolderName)
		}
		return metav1.OwnerReference{}, fmt.Errorf("reading the holder ClusterRole %s: %w", r.opts.HolderName, err)
	}
	if cr.DeletionTimestamp != nil {
		return metav1.OwnerReference{}, fmt.Errorf("the holder ClusterRole %s is being deleted: recreate it (config/operand-cleanup) once it is gone", r.opts.HolderName)
	}
	return metav1.OwnerReference{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole", Name: cr.Name, UID: cr.UID}, nil
}

// extensionRef is the controller reference operator-controller's post-renderer gives every object it installs.
func extensionRef(ce *unstructured.Unstructured) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: ClusterExtensionGVK.GroupVersion().String(), Kind: ClusterExtensionGVK.Kind,
		Name: ce.GetName(), UID: ce.GetUID(), Controller: &t, BlockOwnerDeletion: &t}
}

func refIndex(refs []metav1.OwnerReference, uid types.UID) int {
	for i, r := range refs {
		if r.UID == uid {
			return i
		}
	}
	return -1
}

// installed lists, live, the extension's objects of the held kinds: labelled by operator-controller
// with the extension's name and either owned by this very ClusterExtension (UID), or carrying the holder
// reference without another ClusterExtension's (the garbage collector strips the reference to an owner
// deleted in foreground from an object that has another live owner), or CRDs its own orphan release
// marked (OrphanedFromAnnotation with its UID). CRDs an orphan uninstall of an earlier ClusterExtension
// of the same name left behind are listed only once this one adopted them.
func (r *Reconciler) installed(ctx context.Context, ce *unstructured.Unstructured, holderUID types.UID, kinds ...schema.GroupVersionKind) ([]*metav1.PartialObjectMetadata, error) {
	if len(kinds) == 0 {
		kinds = heldKinds
	}
	var out []*metav1.PartialObjectMetadata
	for _, gvk := range kinds {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.live.List(ctx, l, client.MatchingLabelsSelector{Selector: selectorFor(gvk, ce.GetName())}); err != nil {
			return nil, fmt.Errorf("listing the %ss of ClusterExtension %s: %w", gvk.Kind, ce.GetName(), err)
		}
		for i := range l.Items {
			o := &l.Items[i]
			o.SetGroupVersionKind(gvk)
			of, marked := o.Annotations[OrphanedFromAnnotation]
			held := holderUID != "" && refIndex(o.OwnerReferences, holderUID) >= 0 && !ownedByOtherExtension(o, ce)
			if marked && of != orphanKey(ce) {
				// Left behind by an earlier ClusterExtension's orphan uninstall (the mark stays): this one's
				// once adopted, by its reference or, the GC having stripped that in a foreground deletion, by
				// its hold (the holder's reference with HeldByAnnotation, which no orphan release leaves;
				// an earlier version of this controller left orphans the holder's pair without it).
				held = held && o.Annotations[HeldByAnnotation] == string(holderUID)
			}
			// Orphaned by this very ClusterExtension (no owner left): its opt-out release gives it back.
			mine := refIndex(o.OwnerReferences, ce.GetUID()) >= 0 || held || (marked && of == orphanKey(ce))
			if mine {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

func ownedByOtherExtension(o *metav1.PartialObjectMetadata, ce *unstructured.Unstructured) bool {
	for _, ref := range o.OwnerReferences {
		if ref.Kind == ClusterExtensionGVK.Kind && ref.UID != ce.GetUID() {
			return true
		}
	}
	return false
}

func orphanKey(ce *unstructured.Unstructured) string { return ce.GetName() + "/" + string(ce.GetUID()) }

// setRefs patches an object's owner references (and annotations when not nil) guarded by its
// resourceVersion: a concurrent change (helm, the garbage collector) fails the patch and the next
// reconcile starts from the new state. ownerReferences and finalizers changes are exempt from RBAC's
// escalation checks (k8s.io/kubernetes pkg/registry/rbac IsOnlyMutatingGCFields).
// Every change is logged: the controller's log is the record of what it did to whose owners.
// A CRD's HeldByAnnotation follows its holder's reference in the same write (heldBy).
func (r *Reconciler) setRefs(ctx context.Context, o *metav1.PartialObjectMetadata, refs []metav1.OwnerReference, annotations map[string]string) error {
	orig := o.DeepCopy()
	o.OwnerReferences = refs
	if annotations != nil {
		o.Annotations = annotations
	}
	if o.GroupVersionKind() == crdGVK {
		o.Annotations = r.heldBy(o.Annotations, refs)
	}
	err := r.client.Patch(ctx, o, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if err == nil {
		log.FromContext(ctx).Info("owner references set", "kind", o.Kind, "object", objName(o),
			"from", refNames(orig.OwnerReferences), "to", refNames(refs), "resourceVersion", o.ResourceVersion)
	}
	return err
}

// refNames names owner references as kind/name/uid for the log.
func refNames(refs []metav1.OwnerReference) []string {
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		out = append(out, ref.Kind+"/"+ref.Name+"/"+string(ref.UID))
	}
	return out
}

// hold gives every installed object of the extension that is not being deleted the holder reference,
// appended last: helm-operator-plugins' Reconcile drops the JSON-patch "remove" operations an extra
// trailing reference would cause on a CRD, and typed objects get a three-way strategic merge keyed by
// UID (docs/olm-v1.md). It returns what is held.
func (r *Reconciler) hold(ctx context.Context, ce *unstructured.Unstructured, holder metav1.OwnerReference, kinds ...schema.GroupVersionKind) ([]string, error) {
	// Invariant (doc.go, invariant 6): the holder's reference is added only while the live
	// ClusterExtension, the very object (UID), carries Finalizer. finish removes Finalizer only after
	// release, and reconciles of one ClusterExtension never run at once, so nothing is held again once
	// release began: a cached copy lagging behind finish (a status event queued before the finalizer
	// went) would otherwise give the holder back to objects release had just given back to the
	// ClusterExtension; the GC then strips the gone ClusterExtension's reference beside that live
	// owner, and the object keeps the holder's reference alone.
	if ok, err := r.armedLive(ctx, ce); err != nil || !ok {
		return nil, err
	}
	objs, err := r.installed(ctx, ce, holder.UID, kinds...)
	if err != nil {
		return nil, err
	}
	var held []string
	for _, o := range objs {
		if o.DeletionTimestamp != nil {
			continue // helm deleted it (an upgrade dropped it) or the GC got there first: not ours to keep
		}
		if refIndex(o.OwnerReferences, holder.UID) < 0 {
			refs := append(append([]metav1.OwnerReference(nil), o.OwnerReferences...), holder)
			if err := r.setRefs(ctx, o, refs, nil); err != nil {
				return nil, fmt.Errorf("holding %s %s: %w", o.Kind, objName(o), err)
			}
		} else if o.GroupVersionKind() == crdGVK && o.Annotations[HeldByAnnotation] != string(holder.UID) {
			// Held before the controller marked its holds: the mark, so that the orphan guard keeps the hold.
			refs := o.OwnerReferences
			if err := r.setRefs(ctx, o, refs, nil); err != nil {
				return nil, fmt.Errorf("holding %s %s: %w", o.Kind, objName(o), err)
			}
		}
		held = append(held, o.Kind+" "+objName(o))
	}
	sort.Strings(held)
	return held, nil
}

// heldBy is annotations (a copy) with HeldByAnnotation naming the holder's UID when refs hold the object,
// and without it otherwise. The orphan guard refuses a write that drops the reference the mark names
// while keeping the mark, and no write of this controller does: so only a foreign one (operator-
// controller's JSON patch replacing the first reference, once the GC stripped the ClusterExtension's in a
// foreground deletion) is refused.
func (r *Reconciler) heldBy(annotations map[string]string, refs []metav1.OwnerReference) map[string]string {
	var uid types.UID
	for _, ref := range refs {
		if r.isHolderRef(ref) {
			uid = ref.UID
		}
	}
	if annotations[HeldByAnnotation] == string(uid) || (uid == "" && annotations == nil) {
		return annotations
	}
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	if uid == "" {
		delete(out, HeldByAnnotation)
	} else {
		out[HeldByAnnotation] = string(uid)
	}
	return out
}

// armedLive reports whether the ClusterExtension, read from the API server (not the cache), is the same
// object (UID) and carries Finalizer.
func (r *Reconciler) armedLive(ctx context.Context, ce *unstructured.Unstructured) (bool, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(ClusterExtensionGVK)
	if err := r.live.Get(ctx, types.NamespacedName{Name: ce.GetName()}, live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return live.GetUID() == ce.GetUID() && slices.Contains(live.GetFinalizers(), Finalizer), nil
}

// release drops the holder reference from the extension's objects. An object the garbage collector
// stripped of its reference to the ClusterExtension (foreground deletion) gets it back, so that the GC
// collects it once the ClusterExtension is gone, as it would have without the hold. With orphanCRDs the
// CRDs are marked OrphanedFromAnnotation and get orphanedRefs instead.
func (r *Reconciler) release(ctx context.Context, ce *unstructured.Unstructured, holderUID types.UID, orphanCRDs bool) (_ []string, changed int, _ error) {
	objs, err := r.installed(ctx, ce, holderUID)
	if err != nil {
		return nil, 0, err
	}
	var orphaned []string
	for _, o := range objs {
		refs := append([]metav1.OwnerReference(nil), o.OwnerReferences...)
		var annotations map[string]string
		hi, hasCE := refIndex(refs, holderUID), refIndex(refs, ce.GetUID()) >= 0
		if orphanCRDs && o.GroupVersionKind() == crdGVK {
			orphaned = append(orphaned, o.Name)
			want := r.orphanedRefs(o.OwnerReferences, ce.GetUID())
			if o.Annotations[OrphanedFromAnnotation] == orphanKey(ce) && len(want) == len(o.OwnerReferences) {
				continue
			}
			refs = want
			annotations = map[string]string{}
			for k, v := range o.Annotations {
				annotations[k] = v
			}
			annotations[OrphanedFromAnnotation] = orphanKey(ce)
		} else {
			// A CRD an orphan release of this ClusterExtension marked, the user having opted out since:
			// unmarked, or the sweep would take the ClusterExtension's reference for a late
			// operator-controller patch and orphan it once more.
			marked := o.GroupVersionKind() == crdGVK && o.Annotations[OrphanedFromAnnotation] == orphanKey(ce)
			if hi < 0 && hasCE && !marked {
				continue
			}
			if marked {
				annotations = maps.Clone(o.Annotations)
				delete(annotations, OrphanedFromAnnotation)
			}
			// Every holder reference.
			refs = refs[:0]
			for _, ref := range o.OwnerReferences {
				if ref.UID != holderUID {
					refs = append(refs, ref)
				}
			}
			if !hasCE {
				refs = append(refs, extensionRef(ce))
			}
		}
		if err := r.setRefs(ctx, o, refs, annotations); err != nil {
			return nil, changed, fmt.Errorf("releasing %s %s: %w", o.Kind, objName(o), err)
		}
		changed++
	}
	sort.Strings(orphaned)
	return orphaned, changed, nil
}

// sweep drops the holder reference from objects whose ClusterExtension is gone (released while this
// controller was down, or an orphan's CRDs an earlier version of it left with the holder's pair). name
// limits it to one extension's objects ("" for all).
func (r *Reconciler) sweep(ctx context.Context, name string) error {
	holder, err := r.holder(ctx)
	if err != nil {
		return nil // nothing can be held without a holder
	}
	var errs []string
	for _, gvk := range heldKinds {
		set, nameLabel := labels.Set{ownerKindLabel: ClusterExtensionGVK.Kind}, OwnerNameLabel
		if gvk == secretGVK {
			set, nameLabel = labels.Set{"type": "index"}, "name"
		}
		if name != "" {
			set[nameLabel] = name
		}
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.live.List(ctx, l, client.MatchingLabels(set)); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for i := range l.Items {
			o := &l.Items[i]
			o.SetGroupVersionKind(gvk)
			if err := r.sweepOne(ctx, o, o.Labels[nameLabel], holder); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("releasing holds of ClusterExtensions that are gone: %s", strings.Join(errs, "; "))
	}
	return nil
}

// sweepOne looks at one object of the ClusterExtension name that carries the holder's reference, and
// drops it unless a ClusterExtension of the name still needs it (its reconcile decides then).
func (r *Reconciler) sweepOne(ctx context.Context, o *metav1.PartialObjectMetadata, name string, holder metav1.OwnerReference) error {
	if refIndex(o.OwnerReferences, holder.UID) < 0 {
		return nil
	}
	ce := &unstructured.Unstructured{}
	ce.SetGroupVersionKind(ClusterExtensionGVK)
	err := r.live.Get(ctx, types.NamespacedName{Name: name}, ce)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	live := err == nil
	orphanOf, orphan := o.Annotations[OrphanedFromAnnotation]
	switch {
	case live && (refIndex(o.OwnerReferences, ce.GetUID()) >= 0 || orphanOf == orphanKey(ce)):
		// Its ClusterExtension is there, also one that adopted a CRD an earlier one orphaned (the mark
		// stays): the holder's reference is that one's hold; its reconcile decides.
		return nil
	case live && (!orphan || o.Annotations[HeldByAnnotation] == string(holder.UID)) && slices.Contains(ce.GetFinalizers(), Finalizer):
		// A ClusterExtension of the name is armed: the object lost its reference to the GC in a foreground
		// deletion that is still held (the sweep at start runs during uninstalls), or waits for a new
		// one's install to adopt it. installed() finds it by the holder's reference, and that
		// reconcile's release gives it the ClusterExtension's: dropping the holder here would leave it
		// with no reference that anything can find or give back. That holds for a CRD it adopted after an
		// earlier ClusterExtension's orphan uninstall too (held-by: its hold, not a legacy orphan's pair).
		return nil
	case orphan:
		// An orphaned CRD an earlier version of this controller left with the holder's pair of
		// references: the user's now (a ClusterExtension of the name adopts it); the orphan guard keeps
		// it from the gone ClusterExtension.
		refs := slices.DeleteFunc(slices.Clone(o.OwnerReferences), func(ref metav1.OwnerReference) bool { return ref.UID == holder.UID })
		return client.IgnoreNotFound(r.setRefs(ctx, o, refs, nil))
	}
	var liveUID types.UID
	if live {
		liveUID = ce.GetUID()
	}
	return client.IgnoreNotFound(r.setRefs(ctx, o, sweptRefs(o.OwnerReferences, name, liveUID, holder.UID), nil))
}

// orphanedRefs are an orphaned CRD's owner references: neither the ClusterExtension's nor the holder's
// (any other owner stays). Written in one request with OrphanedFromAnnotation: from then on the orphan
// guard refuses any write that gives the CRD back to that ClusterExtension (invariant 7).
func (r *Reconciler) orphanedRefs(refs []metav1.OwnerReference, ceUID types.UID) []metav1.OwnerReference {
	return slices.DeleteFunc(slices.Clone(refs), func(ref metav1.OwnerReference) bool {
		return ref.UID == ceUID || r.isHolderRef(ref)
	})
}

// isHolderRef: ref names the holder ClusterRole, whatever its UID (a holder deleted and made again).
func (r *Reconciler) isHolderRef(ref metav1.OwnerReference) bool {
	return ref.Kind == "ClusterRole" && ref.Name == r.opts.HolderName
}

// sweptRefs are the owner references an object held for the ClusterExtension name keeps when the sweep
// drops the holder's; liveUID is the live ClusterExtension of the name ("" if none), which is neither
// armed nor referenced by the object (sweepOne leaves those to its reconcile).
//
// Invariant: a hold never leaves an object without an owner (doc.go, invariant 6). Any reference the
// object has beside the holder's may be dangling, and the GC strips a dangling one beside the live holder
// with a patch keyed by its UID and decided from earlier reads: one that lands after the sweep dropped
// the holder would leave nothing. So the object gets a reference to the gone ClusterExtension under a
// fresh UID, which no strip decided before the sweep names, and loses its references to ClusterExtensions
// of the name that are gone. The GC finds that owner absent (isDangling: not found, or found with another
// UID) and deletes the object once it has no other live owner, as it would have without the hold; beside
// a live owner (a foreign one, or the controller reference of a new ClusterExtension of the name that
// adopts it) it strips it. Not a controller reference, so that an adoption is not refused; not blocking.
func sweptRefs(refs []metav1.OwnerReference, name string, liveUID, holderUID types.UID) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, ref := range refs {
		gone := ref.Kind == ClusterExtensionGVK.Kind && ref.Name == name && ref.UID != liveUID
		if ref.UID != holderUID && !gone {
			out = append(out, ref)
		}
	}
	return append(out, goneExtensionRef(name))
}

// goneExtensionRef is a reference to the ClusterExtension name, gone: the GC finds it absent.
func goneExtensionRef(name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: ClusterExtensionGVK.GroupVersion().String(), Kind: ClusterExtensionGVK.Kind,
		Name: name, UID: uuid.NewUUID()}
}

func objName(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
