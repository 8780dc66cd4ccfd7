package main

import (
	"bytes"
	"strings"
	"testing"
)

const log = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","requestURI":"/apis/example.com/v1/namespaces/a/widgets/w","verb":"get","userAgent":"e2e.test/v0.0.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"widgets","namespace":"a","name":"w"},"stageTimestamp":"2026-11-25T19:00:00.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","requestURI":"/apis/example.com/v1/namespaces/a/widgets/w","verb":"get","userAgent":"e2e.test/v0.0.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"widgets","namespace":"a","name":"w"},"stageTimestamp":"2026-11-25T19:00:01.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseStarted","requestURI":"/api/v1/configmaps?watch=true","verb":"watch","userAgent":"olm/v0.0.0","objectRef":{"resource":"configmaps"},"stageTimestamp":"2026-11-25T19:00:01.500000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/a/configmaps","verb":"deletecollection","userAgent":"kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc/namespace-controller","objectRef":{"resource":"configmaps","namespace":"a"},"stageTimestamp":"2026-11-25T19:00:02.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","requestURI":"/apis/operators.coreos.com/v1alpha1/namespaces/a/clusterserviceversions/x/status","verb":"update","userAgent":"olm/v0.0.0","objectRef":{"resource":"clusterserviceversions","subresource":"status"},"stageTimestamp":"2026-11-25T19:00:03.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","requestURI":"/readyz?verbose","verb":"get","userAgent":"Go-http-client/1.1","stageTimestamp":"2026-11-25T19:00:04.000000Z"}
`

func TestSumsRequestsByClientVerbAndResource(t *testing.T) {
	s, err := summarize(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s.print(&out, 10)
	got := strings.Join(strings.Fields(out.String()), " ") // the columns' widths do not matter
	for _, want := range []string{
		"5 requests in 4s (1/s)",                       // the watch's ResponseStarted line is not a request
		"e2e.test 2 40 %",                              // clients by program
		"kube-controller-manager/namespace-controller", // the controller manager by controller
		"e2e.test get widgets 2",
		"olm update clusterserviceversions/status 1",
		"Go-http-client get /readyz 1", // non-resource requests by path
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
}

func TestALineThatIsNotAnEventIsNamed(t *testing.T) {
	_, err := summarize(strings.NewReader(strings.SplitN(log, "\n", 2)[0] + "\nnot json\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("want an error naming line 2, got %v", err)
	}
}
