package crashlog_test

import (
	"strings"
	"testing"

	"github.com/cleanup-e2e/cleanup-e2e/framework/crashlog"
)

// What operators write before they exit, as each logger writes it, and the line a failure must quote.
func TestCauseQuotesTheLastErrorNotTheStackThatFollowsIt(t *testing.T) {
	for _, tc := range []struct {
		name, log, want string
	}{{
		// kubebuilder go/v4's main: zap in development mode (console encoder), a stack trace after
		// every error; the bundle passes --metrics-cert-path without the volume.
		name: "zap console with a stack trace after it",
		log: "2026-11-27T10:00:00Z\tINFO\tsetup\tInitializing metrics certificate watcher using provided certificates\t{\"metrics-cert-path\": \"/tmp/k8s-metrics-server/metrics-certs\"}\n" +
			"2026-11-27T10:00:00Z\tERROR\tsetup\tto initialize metrics certificate watcher\t{\"error\": \"open /tmp/k8s-metrics-server/metrics-certs/tls.crt: no such file or directory\"}\n" +
			"main.main\n\t/workspace/cmd/main.go:185\nruntime.main\n\t/usr/local/go/src/runtime/proc.go:290\n",
		want: `ERROR setup to initialize metrics certificate watcher {"error": "open /tmp/k8s-metrics-server/metrics-certs/tls.crt: no such file or directory"}`,
	}, {
		name: "zap JSON, the stack trace inside the line",
		log: `{"level":"info","ts":"2026-11-27T10:00:00Z","logger":"setup","msg":"starting manager"}` + "\n" +
			`{"level":"error","ts":"2026-11-27T10:00:01Z","logger":"setup","msg":"unable to start manager","error":"MEMCACHED_IMAGE is not set","stacktrace":"main.main\n\t/workspace/cmd/main.go:99\nruntime.main\n\t/usr/local/go/src/runtime/proc.go:290"}` + "\n",
		want: "setup: unable to start manager: MEMCACHED_IMAGE is not set",
	}, {
		name: "klog's ErrorS and its JSON format",
		log: "I1127 10:00:00.000000       1 main.go:40] starting\n" +
			"E1127 10:00:01.000000       1 main.go:52] \"failed to read config\" err=\"open /etc/op/config.yaml: no such file or directory\"\n" +
			"goroutine 1 [running]:\nmain.main()\n\t/src/main.go:52 +0x1d\n",
		want: `E1127 10:00:01.000000       1 main.go:52] "failed to read config" err="open /etc/op/config.yaml: no such file or directory"`,
	}, {
		name: "klog JSON: an error field, no level",
		log: `{"ts":1732701600000.1,"caller":"main.go:52","msg":"failed to read config","err":"permission denied"}` + "\n" +
			`{"ts":1732701600000.2,"caller":"main.go:60","msg":"shutting down","v":0}` + "\n",
		want: "failed to read config: permission denied",
	}, {
		name: "a panic, its goroutine dump after it",
		log: "2026-11-27T10:00:00Z\tINFO\tstarting\n" +
			"panic: runtime error: invalid memory address or nil pointer dereference\n" +
			"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x10a3c5e]\n\n" +
			"goroutine 1 [running]:\nexample.com/op/internal/controller.(*MemcachedReconciler).Reconcile(0xc000123456, {0x1, 0x2})\n" +
			"\t/workspace/internal/controller/memcached_controller.go:80 +0x1e\ncreated by sigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller).Start in goroutine 1\n",
		want: "panic: runtime error: invalid memory address or nil pointer dereference [signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x10a3c5e]",
	}, {
		name: "a fatal error",
		log:  "fatal error: concurrent map writes\n\ngoroutine 7 [running]:\nmain.main()\n\t/src/main.go:9 +0x1d\n",
		want: "fatal error: concurrent map writes",
	}, {
		name: "logfmt",
		log:  "time=2026-11-27T10:00:00Z level=INFO msg=start\ntime=2026-11-27T10:00:01Z level=ERROR msg=\"cannot start\" err=\"bind: address already in use\"\n",
		want: `time=2026-11-27T10:00:01Z level=ERROR msg="cannot start" err="bind: address already in use"`,
	}, {
		name: "the last of several errors",
		log: "2026-11-27T10:00:00Z\tERROR\tReconciler error\t{\"error\": \"conflict\"}\n" +
			"2026-11-27T10:00:05Z\tERROR\tsetup\tproblem running manager\t{\"error\": \"leader election lost\"}\n",
		want: `ERROR setup problem running manager {"error": "leader election lost"}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := crashlog.Cause(tc.log)
			if !ok || got != tc.want {
				t.Errorf("Cause = %q, %v\nwant    %q, true", got, ok, tc.want)
			}
			if d := crashlog.Describe(tc.log); !strings.HasPrefix(d, "the last error it logged: ") {
				t.Errorf("Describe = %q, want it to quote the error", d)
			}
		})
	}
}

// Without an error line the last line that is not a stack frame is quoted, and said to be no error.
func TestCauseWithoutAnErrorLine(t *testing.T) {
	log := "starting\nopen /tmp/k8s-webhook-server/serving-certs/tls.crt: no such file or directory\n" +
		"main.main()\n\t/src/main.go:9 +0x1d\n"
	got, ok := crashlog.Cause(log)
	if ok || got != "open /tmp/k8s-webhook-server/serving-certs/tls.crt: no such file or directory" {
		t.Errorf("Cause = %q, %v", got, ok)
	}
	if d := crashlog.Describe(log); !strings.Contains(d, "no line of it reports an error") || !strings.Contains(d, "tls.crt") {
		t.Errorf("Describe = %q", d)
	}
	if d := crashlog.Describe(""); d != "it wrote nothing" {
		t.Errorf("Describe of nothing = %q", d)
	}
	// An info line with "error" in its text, and JSON info lines, are no errors.
	for _, l := range []string{
		"2026-11-27T10:00:00Z\tINFO\tno error so far\n",
		`{"level":"info","msg":"retrying","error":"transient"}` + "\n",
		`{"level":"info","msg":"ok"}` + "\n",
	} {
		if q, ok := crashlog.Cause(l); ok {
			t.Errorf("Cause(%q) = %q, took an info line for an error", l, q)
		}
	}
}

func TestExitsInReadsWhatExitedMessageWrote(t *testing.T) {
	msg := crashlog.ExitedMessage(4, "last error: exit status 1; the last error it logged: boom")
	if n, ok := crashlog.ExitsIn("CrashLoopBackOff: " + msg); !ok || n != 4 {
		t.Errorf("ExitsIn(%q) = %d, %v", msg, n, ok)
	}
	if _, ok := crashlog.ExitsIn("operator started, its readiness probe does not succeed yet"); ok {
		t.Error("ExitsIn read a count from a message without one")
	}
}

// How an operator that logged no error ended: its last line, not a stack frame, a structured line as
// time, logger and message.
func TestLastLine(t *testing.T) {
	for log, want := range map[string]string{
		"": "",
		`{"level":"info","ts":"2026-12-04T11:16:29Z","logger":"op","msg":"Wait completed, proceeding to shutdown the manager","x":1}` + "\n\n": "2026-12-04T11:16:29Z op Wait completed, proceeding to shutdown the manager",
		"I1204 11:16:29.000000       1 main.go:9] stopped\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:52 +0x1d\n":                     "I1204 11:16:29.000000       1 main.go:9] stopped",
	} {
		if got := crashlog.LastLine(log); got != want {
			t.Errorf("LastLine(%q) = %q, want %q", log, got, want)
		}
	}
	log := `{"ts":"10:00:01","msg":"removed finalizer","namespace":"a","name":"w1"}` + "\n" +
		`{"ts":"10:00:02","msg":"created record","namespace":"a","name":"w10"}` + "\n"
	for names, want := range map[[2]string]string{
		{"w1", "a"}: "10:00:01 removed finalizer", {"w10", "a"}: "10:00:02 created record", {"w2", "a"}: "", {"", ""}: "10:00:02 created record",
	} {
		if got := crashlog.LastLine(log, names[0], names[1]); got != want {
			t.Errorf("LastLine(log, %q, %q) = %q, want %q", names[0], names[1], got, want)
		}
	}
}

// What an operator said last about one custom resource: the "Reconciler error" controller-runtime logs
// for it, not one about another object, not an info line, and not a name that only contains it.
func TestCauseAboutQuotesTheLastErrorNamingTheObject(t *testing.T) {
	log := `{"level":"error","msg":"Reconciler error","controller":"widget","namespace":"a","name":"w1","error":"widgets.example.com \"w1\" is forbidden: User \"system:serviceaccount:op:op\" cannot update resource \"widgets\""}` + "\n" +
		`{"level":"error","msg":"Reconciler error","controller":"widget","namespace":"a","name":"w10","error":"Internal error occurred: w10"}` + "\n" +
		`{"level":"info","msg":"removed finalizer","controller":"widget","namespace":"a","name":"w1"}` + "\n" +
		"2026-11-27T10:00:00Z\tERROR\tReconciler error\t{\"controller\": \"widget\", \"namespace\": \"b\", \"name\": \"w1\", \"error\": \"connection refused\"}\n" +
		"main.main\n\t/workspace/cmd/main.go:185\n"
	for _, tc := range []struct {
		names  []string
		want   string
		wantOK bool
	}{
		{[]string{"w1", "a"}, `Reconciler error: widgets.example.com "w1" is forbidden: User "system:serviceaccount:op:op" cannot update resource "widgets"`, true},
		{[]string{"w1", "b"}, `ERROR Reconciler error {"controller": "widget", "namespace": "b", "name": "w1", "error": "connection refused"}`, true},
		{[]string{"w10", "a"}, "Reconciler error: Internal error occurred: w10", true},
		{[]string{"w", "a"}, "", false},
		{[]string{"w2", "a"}, "", false},
	} {
		got, ok := crashlog.CauseAbout(log, tc.names...)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("CauseAbout(%v) = %q, %v; want %q, %v", tc.names, got, ok, tc.want, tc.wantOK)
		}
	}
}
