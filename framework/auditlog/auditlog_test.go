package auditlog

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func event(verb, user, impersonated, name, sub string, code int, at string) string {
	imp := ""
	if impersonated != "" {
		imp = fmt.Sprintf(`"impersonatedUser":{"username":%q},`, impersonated)
	}
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":%q,`+
		`"user":{"username":%q},%s"userAgent":"kubectl/v1.37.1 (linux/amd64) kubernetes/abc",`+
		`"objectRef":{"resource":"widgets","namespace":"team-a","name":%q,"apiGroup":"g.example","apiVersion":"v1","subresource":%q},`+
		`"responseStatus":{"metadata":{},"code":%d},"requestReceivedTimestamp":"2026-12-04T10:00:%s.000000Z"}`,
		verb, user, imp, name, sub, code, at)
}

var w1 = Object{APIGroup: "g.example", Resource: "widgets", Namespace: "team-a", Name: "w1"}

// The write that let an object go is its last successful write of itself since its latest create:
// not a status write, a refused one, another object's, or a write to an earlier object of that name.
func TestLastWriteIsTheOneThatLetTheObjectGo(t *testing.T) {
	log := strings.Join([]string{
		event("create", "old-test", "", "w1", "", 201, "00"),
		event("patch", "old-admin", "", "w1", "", 200, "01"),
		event("create", "system:serviceaccount:test:runner", "", "w1", "", 201, "02"),
		event("update", "system:serviceaccount:ops:widget-operator", "", "w1", "", 200, "03"),
		event("delete", "system:serviceaccount:kube-system:generic-garbage-collector", "", "w1", "", 200, "04"),
		`not json: the API server's own line`,
		event("patch", "admin", "jane", "w1", "", 200, "05"),
		event("update", "system:serviceaccount:ops:widget-operator", "", "w1", "status", 200, "06"),
		event("patch", "system:serviceaccount:ops:widget-operator", "", "w1", "", 409, "07"),
		event("patch", "bob", "", "w10", "", 200, "08"),
	}, "\n")
	w, ok := LastWrite([]byte(log), w1)
	if !ok {
		t.Fatal("no write found")
	}
	want := "patch by jane (impersonated by admin), kubectl/v1.37.1 at 10:00:05.000"
	if w.String() != want {
		t.Errorf("last write %q, want %q", w, want)
	}
}

func TestLastWriteIsNotFoundWithoutOne(t *testing.T) {
	for name, log := range map[string]string{
		"empty":           "",
		"only its create": event("create", "test", "", "w1", "", 201, "00"),
		"writes before its create, of an earlier w1": event("patch", "admin", "", "w1", "", 200, "00") + "\n" +
			event("create", "test", "", "w1", "", 201, "01"),
		"another object's": event("patch", "admin", "", "w2", "", 200, "00"),
	} {
		if w, ok := LastWrite([]byte(log), w1); ok {
			t.Errorf("%s: found %v, want none", name, w)
		}
	}
}

// The deleter is the last delete of the object, or deletecollection of its resource in its namespace,
// received by the time given: not a later one, a refused one, a patch, or another object's.
func TestDeleterIsTheLastDeletionOfTheObjectByThen(t *testing.T) {
	collection := strings.Replace(event("deletecollection", "system:serviceaccount:kube-system:namespace-controller", "", "", "", 200, "04"),
		`"name":"",`, ``, 1)
	log := strings.Join([]string{
		event("delete", "old-admin", "", "w1", "", 200, "00"),
		event("delete", "system:serviceaccount:kube-system:generic-garbage-collector", "", "w1", "", 200, "02"),
		event("delete", "bob", "", "w1", "", 403, "03"),
		event("patch", "jane", "", "w1", "", 200, "03"),
		event("delete", "carol", "", "w2", "", 200, "03"),
		collection,
		event("delete", "later", "", "w1", "", 200, "09"),
	}, "\n")
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, "2026-12-04T10:00:"+s+"Z"); return t }
	for before, want := range map[string]string{
		"01": "delete by old-admin",
		"03": "delete by system:serviceaccount:kube-system:generic-garbage-collector",
		"05": "deletecollection by system:serviceaccount:kube-system:namespace-controller",
	} {
		w, ok := Deleter([]byte(log), w1, at(before))
		if !ok || !strings.HasPrefix(w.String(), want) {
			t.Errorf("by 10:00:%s: deleter %q (found: %t), want %q", before, w, ok, want)
		}
	}
	for name, log := range map[string]string{
		"no deletion of it": event("patch", "jane", "", "w1", "", 200, "00"),
		"a deletion of an earlier w1": event("delete", "jane", "", "w1", "", 200, "00") + "\n" +
			event("create", "test", "", "w1", "", 201, "01"),
	} {
		if w, ok := Deleter([]byte(log), w1, at("09")); ok {
			t.Errorf("%s: found %v", name, w)
		}
	}
}
