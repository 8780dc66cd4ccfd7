package specs

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ownerState says what owns an object that should have gone with its owner and whether anything will
// delete it: with no owner reference and no deletionTimestamp it is orphaned, and the garbage collector
// never deletes it.
func ownerState(o metav1.Object) string {
	var refs []string
	for _, r := range o.GetOwnerReferences() {
		refs = append(refs, fmt.Sprintf("%s %s (uid %s, controller %t, blockOwnerDeletion %t)", r.Kind, r.Name, r.UID,
			r.Controller != nil && *r.Controller, r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion))
	}
	state := "ownerReferences: none"
	if len(refs) > 0 {
		state = "ownerReferences: " + strings.Join(refs, ", ")
	}
	if ts := o.GetDeletionTimestamp(); ts != nil {
		return state + "; deletionTimestamp " + ts.UTC().Format(time.RFC3339)
	}
	state += "; not being deleted"
	if len(refs) == 0 {
		state += " (orphaned: the garbage collector will never delete it)"
	}
	return state
}
