package operandcleanup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Field indexes on the cached ClusterRoles/ClusterRoleBindings.
const (
	// rbacSourceField: "<ns>/<csv>" for objects OLM made for a CSV (olm.owner* labels).
	rbacSourceField = "operandcleanup.olm-owner"
	// rbacCopyField: "<ns>/<csv>" for this controller's copies (from RBACCopyCSVAnnotation).
	rbacCopyField = "operandcleanup.copy-for"
)

// rbacCopyLabelValue identifies a CSV in RBACCopyForLabel.
func rbacCopyLabelValue(key types.NamespacedName) string {
	v := key.Namespace + "." + key.Name
	if len(validation.IsValidLabelValue(v)) == 0 {
		return v
	}
	sum := sha256.Sum256([]byte(key.String()))
	return "sha256-" + hex.EncodeToString(sum[:])[:48]
}

// rbacCopyName is the copy's name: the prefix plus the source name, hashed when that would be too long.
func rbacCopyName(source string) string {
	n := RBACCopyNamePrefix + source
	if len(n) <= validation.DNS1123SubdomainMaxLength {
		return n
	}
	sum := sha256.Sum256([]byte(source))
	keep := validation.DNS1123SubdomainMaxLength - len(RBACCopyNamePrefix) - 17
	return RBACCopyNamePrefix + strings.TrimRight(source[:keep], ".-") + "-" + hex.EncodeToString(sum[:])[:16]
}

// olmOwnerKey is the rbacSourceField indexer.
func olmOwnerKey(obj client.Object) []string {
	l := obj.GetLabels()
	if l[olmOwnerKindLabel] != olmOwnerKindCSV || l[olmOwnerLabel] == "" || l[olmOwnerNamespaceLabel] == "" {
		return nil
	}
	return []string{l[olmOwnerNamespaceLabel] + "/" + l[olmOwnerLabel]}
}

// copyForKey is the rbacCopyField indexer.
func copyForKey(obj client.Object) []string {
	if _, ok := obj.GetLabels()[RBACCopyForLabel]; !ok {
		return nil
	}
	if v := obj.GetAnnotations()[RBACCopyCSVAnnotation]; v != "" {
		return []string{v}
	}
	return nil
}

func copyMeta(key types.NamespacedName, source string) (map[string]string, map[string]string) {
	return map[string]string{RBACCopyForLabel: rbacCopyLabelValue(key), ManagedByLabel: ManagedByValue},
		map[string]string{RBACCopyCSVAnnotation: key.String(), RBACCopySourceAnnotation: source}
}

// isOurCopy guards every write and delete: only objects carrying our label AND naming this CSV.
func isOurCopy(obj client.Object, key types.NamespacedName) bool {
	return obj.GetLabels()[RBACCopyForLabel] == rbacCopyLabelValue(key) && obj.GetAnnotations()[RBACCopyCSVAnnotation] == key.String()
}

// rbacState is what the cache holds for one CSV.
type rbacState struct {
	srcRoles    []rbacv1.ClusterRole
	srcBindings []rbacv1.ClusterRoleBinding
	roles       []rbacv1.ClusterRole
	bindings    []rbacv1.ClusterRoleBinding
}

func (r *Reconciler) readRBAC(ctx context.Context, key types.NamespacedName) (*rbacState, error) {
	s := &rbacState{}
	var roles rbacv1.ClusterRoleList
	var bindings rbacv1.ClusterRoleBindingList
	if err := r.cache.List(ctx, &roles, client.MatchingFields{rbacSourceField: key.String()}); err != nil {
		return nil, err
	}
	if err := r.cache.List(ctx, &bindings, client.MatchingFields{rbacSourceField: key.String()}); err != nil {
		return nil, err
	}
	for _, x := range roles.Items {
		if !isDeleting(&x) {
			s.srcRoles = append(s.srcRoles, x)
		}
	}
	for _, x := range bindings.Items {
		if !isDeleting(&x) {
			s.srcBindings = append(s.srcBindings, x)
		}
	}
	roles, bindings = rbacv1.ClusterRoleList{}, rbacv1.ClusterRoleBindingList{}
	if err := r.cache.List(ctx, &roles, client.MatchingFields{rbacCopyField: key.String()}); err != nil {
		return nil, err
	}
	if err := r.cache.List(ctx, &bindings, client.MatchingFields{rbacCopyField: key.String()}); err != nil {
		return nil, err
	}
	for _, x := range roles.Items {
		if isOurCopy(&x, key) {
			s.roles = append(s.roles, x)
		}
	}
	for _, x := range bindings.Items {
		if isOurCopy(&x, key) {
			s.bindings = append(s.bindings, x)
		}
	}
	return s, nil
}

// syncRBACCopies makes the copies match OLM's cluster RBAC for the CSV: same rules, same subjects, bindings
// pointing at the copied role. Copies are never broader than their source. stillActive is consulted
// (live) before deleting a copy whose source disappeared, because OLM deletes the sources the moment the
// CSV is deleted and the cache may not show that deletion yet.
func (r *Reconciler) syncRBACCopies(ctx context.Context, key types.NamespacedName, stillActive func() (bool, error)) error {
	s, err := r.readRBAC(ctx, key)
	if err != nil {
		return err
	}
	wantRoles := map[string]*rbacv1.ClusterRole{}
	copyOf := map[string]string{}
	for _, src := range s.srcRoles {
		labels, annos := copyMeta(key, src.Name)
		c := &rbacv1.ClusterRole{}
		c.Name, c.Labels, c.Annotations = rbacCopyName(src.Name), labels, annos
		c.Rules = append([]rbacv1.PolicyRule(nil), src.Rules...) // effective rules; no aggregationRule
		wantRoles[c.Name] = c
		copyOf[src.Name] = c.Name
	}
	wantBindings := map[string]*rbacv1.ClusterRoleBinding{}
	for _, src := range s.srcBindings {
		labels, annos := copyMeta(key, src.Name)
		c := &rbacv1.ClusterRoleBinding{}
		c.Name, c.Labels, c.Annotations = rbacCopyName(src.Name), labels, annos
		c.Subjects = append([]rbacv1.Subject(nil), src.Subjects...)
		c.RoleRef = src.RoleRef
		if n, ok := copyOf[src.RoleRef.Name]; ok && src.RoleRef.Kind == "ClusterRole" {
			c.RoleRef.Name = n
		}
		wantBindings[c.Name] = c
	}
	var stale []client.Object
	for i := range s.roles {
		have := &s.roles[i]
		want, ok := wantRoles[have.Name]
		if !ok {
			stale = append(stale, have)
			continue
		}
		delete(wantRoles, have.Name)
		if !equality.Semantic.DeepEqual(have.Rules, want.Rules) || have.AggregationRule != nil || !sameMeta(have, want) {
			upd := have.DeepCopy()
			upd.Rules, upd.AggregationRule, upd.Labels, upd.Annotations = want.Rules, nil, want.Labels, want.Annotations
			if err := r.client.Update(ctx, upd); err != nil {
				return fmt.Errorf("updating ClusterRole copy %s: %w", have.Name, err)
			}
		}
	}
	for _, want := range wantRoles {
		if err := r.createCopy(ctx, want, key); err != nil {
			return err
		}
	}
	for i := range s.bindings {
		have := &s.bindings[i]
		want, ok := wantBindings[have.Name]
		if !ok {
			stale = append(stale, have)
			continue
		}
		delete(wantBindings, have.Name)
		if have.RoleRef != want.RoleRef { // immutable: recreate
			if err := r.client.Delete(ctx, have); client.IgnoreNotFound(err) != nil {
				return err
			}
			wantBindings[have.Name] = want
			continue
		}
		if !equality.Semantic.DeepEqual(have.Subjects, want.Subjects) || !sameMeta(have, want) {
			upd := have.DeepCopy()
			upd.Subjects, upd.Labels, upd.Annotations = want.Subjects, want.Labels, want.Annotations
			if err := r.client.Update(ctx, upd); err != nil {
				return fmt.Errorf("updating ClusterRoleBinding copy %s: %w", have.Name, err)
			}
		}
	}
	for _, want := range wantBindings {
		if err := r.createCopy(ctx, want, key); err != nil {
			return err
		}
	}
	if len(stale) == 0 {
		return nil
	}
	active, err := stillActive()
	if err != nil || !active {
		return err // CSV going away: keep the copies for the cleanup
	}
	return deleteObjects(ctx, r.client, stale)
}

func sameMeta(have, want client.Object) bool {
	for k, v := range want.GetLabels() {
		if have.GetLabels()[k] != v {
			return false
		}
	}
	for k, v := range want.GetAnnotations() {
		if have.GetAnnotations()[k] != v {
			return false
		}
	}
	return true
}

// createCopy creates a copy; an existing object of that name that is not ours is an error, never adopted.
func (r *Reconciler) createCopy(ctx context.Context, obj client.Object, key types.NamespacedName) error {
	err := r.client.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		existing := obj.DeepCopyObject().(client.Object)
		if gerr := r.live.Get(ctx, client.ObjectKeyFromObject(obj), existing); gerr != nil {
			return gerr
		}
		if !isOurCopy(existing, key) {
			return fmt.Errorf("%T %s exists and is not a copy made for CSV %s: not touching it", obj, obj.GetName(), key)
		}
		return nil // ours; the cache is behind, the next pass updates it if needed
	}
	return err
}

// deleteRBACCopies removes every copy made for the CSV (bindings first).
func (r *Reconciler) deleteRBACCopies(ctx context.Context, key types.NamespacedName) error {
	s, err := r.readRBAC(ctx, key)
	if err != nil {
		return err
	}
	objs := make([]client.Object, 0, len(s.roles)+len(s.bindings))
	for i := range s.bindings {
		objs = append(objs, &s.bindings[i])
	}
	for i := range s.roles {
		objs = append(objs, &s.roles[i])
	}
	return deleteObjects(ctx, r.client, objs)
}

func deleteObjects(ctx context.Context, c client.Client, objs []client.Object) error {
	for _, o := range objs {
		uid := o.GetUID()
		if err := c.Delete(ctx, o, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting %s: %w", o.GetName(), err)
		}
	}
	return nil
}
