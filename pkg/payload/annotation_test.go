package payload_test

import (
	"testing"
	"time"

	"github.com/cleanup-e2e/cleanup-e2e/pkg/payload"
)

func TestValidDeleteAnnotation(t *testing.T) {
	cases := []struct {
		name    string
		ann     map[string]string
		found   bool
		wantErr string
	}{
		{"absent", nil, false, ""},
		{"other annotations", map[string]string{"a": "b"}, false, ""},
		{"true", map[string]string{payload.DeleteAnnotation: "true"}, true, ""},
		{"True", map[string]string{payload.DeleteAnnotation: "True"}, true, `invalid delete annotation "release.openshift.io/delete" value: "True"`},
		{"yes", map[string]string{payload.DeleteAnnotation: "yes"}, true, `invalid delete annotation "release.openshift.io/delete" value: "yes"`},
		{"empty", map[string]string{payload.DeleteAnnotation: ""}, true, `invalid delete annotation "release.openshift.io/delete" value: ""`},
		{"false", map[string]string{payload.DeleteAnnotation: "false"}, true, `invalid delete annotation "release.openshift.io/delete" value: "false"`},
		{"spaces", map[string]string{payload.DeleteAnnotation: " true"}, true, `invalid delete annotation "release.openshift.io/delete" value: " true"`},
		// The value between plain quotes, unescaped, as the CVO writes it (lib/resourcedelete/helper.go).
		{"quoted", map[string]string{payload.DeleteAnnotation: `"true"`}, true, `invalid delete annotation "release.openshift.io/delete" value: ""true""`},
		{"backslash and tab", map[string]string{payload.DeleteAnnotation: `a\b` + "\t"}, true, `invalid delete annotation "release.openshift.io/delete" value: "a\b` + "\t" + `"`},
		{"newline", map[string]string{payload.DeleteAnnotation: "true\n"}, true, "invalid delete annotation \"release.openshift.io/delete\" value: \"true\n\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			found, err := payload.ValidDeleteAnnotation(tc.ann)
			if found != tc.found {
				t.Errorf("found = %v", found)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("error = %v, want %s", err, tc.wantErr)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	dep := payload.Resource{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "ns", Name: "op"}
	ns := payload.Resource{Version: "v1", Kind: "Namespace", Name: "gone"}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.FixedZone("X", 3600))
	cases := []struct{ got, want string }{
		{dep.String(), `deployment "ns/op"`},
		{ns.String(), `namespace "gone"`},
		{payload.MsgDeleteRequested(dep), `Delete requested for deployment "ns/op".`},
		{payload.MsgDeleteExpectedBy(dep, at), `Delete of deployment "ns/op" is expected by 2026-11-22T09:00:00Z.`},
		{payload.MsgDeleteAlreadyRequested(dep), `Delete of deployment "ns/op" has already been requested.`},
		{payload.MsgDeleteCompleted(ns), `Delete of namespace "gone" completed.`},
		{payload.MsgReappeared(dep, at), `deployment "ns/op" has reappeared after having been deleted at 2026-11-22T09:00:00Z.`},
		{payload.MsgNotFound(ns), `namespace "gone" not found. It either has already been removed or it has never been installed on this cluster.`},
		{payload.UpgradeableMessage([]string{`namespace "b"`, `deployment "ns/a"`}),
			`Cluster minor or major version upgrades are not allowed while resource deletions are in progress; resources=deployment "ns/a",namespace "b"`},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("got  %s\nwant %s", tc.got, tc.want)
		}
	}
}

func TestClassifyUpdateAndCanUpgrade(t *testing.T) {
	cases := []struct {
		from, to string
		kind     payload.UpdateKind
		allowed  bool // with one deletion in progress
	}{
		{"", "1.0.0", payload.UpdateInitial, true},
		{"1.0.0", "1.0.0", payload.UpdateNone, true},
		{"4.15.3", "4.15.9", payload.UpdatePatch, true},
		{"4.15.3", "4.15.3-rc.1", payload.UpdatePatch, true},
		{"4.15.3", "4.16.0", payload.UpdateMinor, false},
		{"v4.15", "4.14.2", payload.UpdateMinor, true}, // not SemVer and a downgrade: the CVO does not gate it
		{"4.15.3", "5.0.0", payload.UpdateMajor, false},
	}
	for _, tc := range cases {
		kind, err := payload.ClassifyUpdate(tc.from, tc.to)
		if err != nil || kind != tc.kind {
			t.Errorf("%s -> %s: %v %v, want %v", tc.from, tc.to, kind, err, tc.kind)
		}
		ok, msg := payload.CanUpgrade(tc.from, tc.to, []string{`configmap "a/b"`})
		if ok != tc.allowed {
			t.Errorf("CanUpgrade %s -> %s = %v %q", tc.from, tc.to, ok, msg)
		}
		if !ok && msg != payload.UpgradeableMessage([]string{`configmap "a/b"`}) {
			t.Errorf("message %q", msg)
		}
		if ok, _ := payload.CanUpgrade(tc.from, tc.to, nil); !ok {
			t.Errorf("%s -> %s refused with no deletions", tc.from, tc.to)
		}
	}
	if _, err := payload.ClassifyUpdate("1.0.0", "banana"); err == nil {
		t.Error("no error for invalid version")
	}
}
