package auditlog

import (
	"fmt"
	"strings"
	"testing"
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
