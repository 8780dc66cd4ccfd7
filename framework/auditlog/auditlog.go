// Package auditlog reads a Kubernetes API server's audit log (JSON lines of audit.k8s.io/v1 events) to
// say who wrote an object last. That is the question an object's managedFields cannot answer for a
// write that only removes fields, such as removing its last finalizer: the API server drops the
// writer's then empty entry. An uninstall's verdict asks it of a custom resource that went without its
// operator's finalizer work (framework/olmv1).
package auditlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// WritesPolicy is the audit policy the providers run their API servers with (envtest, kind): who made
// each write, once it completed; nothing of reads, leases, events or status writes (which cannot change
// an object's finalizers). What LastWrite needs, at the cost of a line per write.
const WritesPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: None
  resources:
  - group: coordination.k8s.io
  - group: events.k8s.io
  - group: ""
    resources: ["events"]
  - group: "*"
    resources: ["*/status"]
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
`

// Object names an object as the audit log's objectRef does.
type Object struct {
	APIGroup, Resource, Namespace, Name string
}

// Write is one successful request that changed an object.
type Write struct {
	Verb string
	// User is who the request acted as: the impersonated user when there is one.
	User string
	// Impersonator is who authenticated, when the request impersonated User.
	Impersonator string
	UserAgent    string
	At           time.Time
}

func (w Write) String() string {
	by := w.User
	if w.Impersonator != "" {
		by += " (impersonated by " + w.Impersonator + ")"
	}
	agent, _, _ := strings.Cut(w.UserAgent, " ")
	if agent != "" {
		agent = ", " + agent
	}
	return fmt.Sprintf("%s by %s%s at %s", w.Verb, by, agent, w.At.UTC().Format("15:04:05.000"))
}

// LastWrite is the last successful update, patch or delete of obj itself (not of a subresource such as
// status, which cannot change its finalizers) since its latest create in log. For an object that is
// gone it is the request that let it go: the one that removed its last finalizer, or the deletion of
// an object that had none. ok is false when log has no such write (a policy that does not record
// writes, or a log from another cluster).
func LastWrite(log []byte, obj Object) (w Write, ok bool) {
	succeeded(log, func(e *auditv1.Event) {
		if !about(e.ObjectRef, obj) {
			return
		}
		switch e.Verb {
		case "create":
			w, ok = Write{}, false // a new object of that name: what came before was another one
		case "update", "patch", "delete":
			w, ok = write(e), true
		}
	})
	return w, ok
}

// Deleter is the last successful request that deleted obj received at or before before, since its
// latest create: a delete of it, or a deletecollection of its resource in its namespace (the namespace
// controller's, when its namespace goes). ok is false when log has neither: the API server deleted it itself (its CRD's
// deletion), or the policy records no deletions.
func Deleter(log []byte, obj Object, before time.Time) (w Write, ok bool) {
	succeeded(log, func(e *auditv1.Event) {
		if e.RequestReceivedTimestamp.After(before) {
			return
		}
		collection := *e.ObjectRef
		collection.Name = obj.Name
		switch {
		case e.Verb == "create" && about(e.ObjectRef, obj):
			w, ok = Write{}, false // a new object of that name: what came before deleted another one
		case (e.Verb == "delete" && about(e.ObjectRef, obj)) || (e.Verb == "deletecollection" && e.ObjectRef.Name == "" && about(&collection, obj)):
			w, ok = write(e), true
		}
	})
	return w, ok
}

// succeeded calls f, in the log's order, with each request about an object that succeeded (2xx, once
// completed). Lines that are not audit events are skipped.
func succeeded(log []byte, f func(*auditv1.Event)) {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024) // a Request-level event carries the object
	for sc.Scan() {
		var e auditv1.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Stage == auditv1.StageResponseComplete && e.ObjectRef != nil &&
			e.ResponseStatus != nil && e.ResponseStatus.Code >= 200 && e.ResponseStatus.Code <= 299 {
			f(&e)
		}
	}
}

func about(ref *auditv1.ObjectReference, obj Object) bool {
	return ref != nil && ref.Subresource == "" && ref.Name == obj.Name && ref.Namespace == obj.Namespace &&
		ref.Resource == obj.Resource && ref.APIGroup == obj.APIGroup
}

// LetGo says which write let obj, a custom resource that is gone, go: "the write that let it go: patch
// by …", or that log has no write of it (obj named by ObjectOf).
func LetGo(log []byte, mapper meta.RESTMapper, obj *unstructured.Unstructured) string {
	o := ObjectOf(mapper, obj)
	w, ok := LastWrite(log, o)
	if !ok {
		return "the API server's audit log has no write of it (as " + o.Resource + "." + o.APIGroup + ")"
	}
	return "the write that let it go: " + w.String()
}

// DeletedBy says which request deleted obj by before: "the request that deleted it: delete by …", or
// that none in log did, so the API server did itself (its CRD's deletion).
func DeletedBy(log []byte, obj Object, before time.Time) string {
	w, ok := Deleter(log, obj, before)
	if !ok {
		return "no request deleted it in the audit log: the API server did (its CRD's deletion)"
	}
	return "the request that deleted it: " + w.String()
}

// ObjectOf names obj as the audit log does: its resource is its mapping's in mapper, else, its CRD and
// the mapping with it gone, the plural the API server makes by default.
func ObjectOf(mapper meta.RESTMapper, obj *unstructured.Unstructured) Object {
	gvk := obj.GroupVersionKind()
	resource, _ := meta.UnsafeGuessKindToResource(gvk)
	if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		resource = m.Resource
	}
	return Object{APIGroup: gvk.Group, Resource: resource.Resource, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

func write(e *auditv1.Event) Write {
	w := Write{Verb: e.Verb, User: e.User.Username, UserAgent: e.UserAgent, At: e.RequestReceivedTimestamp.Time}
	if e.ImpersonatedUser != nil {
		w.User, w.Impersonator = e.ImpersonatedUser.Username, e.User.Username
	}
	return w
}
