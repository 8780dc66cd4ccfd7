package specs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ownerState says what owns an object that should have gone with its owner and whether anything will
// delete it: with no owner reference and no deletionTimestamp the garbage collector never deletes it —
// orphaned, or never owned, as a CRD of an OLM v0 install (OLM v0 labels its operators' CRDs
// operators.coreos.com/<package>.<namespace>, in its adoption controller, and never deletes them).
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
		if key := olmV0Label(o.GetLabels()); key != "" {
			return state + " (never owned: an OLM v0 install's, label " + key + "; OLM v0 never deletes CRDs and the garbage collector deletes only what has owners)"
		}
		state += " (orphaned: the garbage collector will never delete it)"
	}
	return state
}

// olmV0Label is the first OLM v0 component label key in labels, or "".
func olmV0Label(labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	for _, k := range keys {
		if strings.HasPrefix(k, "operators.coreos.com/") {
			return k
		}
	}
	return ""
}
