// Package crashlog finds, in what an operator wrote before it exited, why it exited: the last line
// that reports an error, in the formats Go operators log in — zap and logr JSON, zap's console encoder
// as kubebuilder scaffolds it, klog, logfmt — or a Go panic or fatal error. Quoting the last line of
// the log instead names nothing: a scaffolded operator's logger prints a stack trace after every
// error, so its log ends with a stack frame ("/usr/local/go/src/runtime/proc.go:283").
//
// The local runtime (envtest) and the OLM waits (kind, an existing cluster: the previous container's
// log) both quote what Cause finds; olmv1.Judge quotes what CauseAbout finds about a custom resource
// an uninstall left stuck.
package crashlog

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// maxQuote bounds a quoted line: a failure message quotes it among other things.
const maxQuote = 600

// Cause returns the last error the log reports, on one line, and true. Without an error line it
// returns the last line that is not part of a stack trace ("" for an empty log) and false: an
// operator that prints its fatal error with fmt.Println and exits says so that way.
func Cause(log string) (string, bool) {
	lines := splitLines(log)
	for i := len(lines) - 1; i >= 0; i-- {
		if q, ok := errorLine(lines, i); ok {
			return clip(q), true
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !stackLine(lines[i]) {
			return clip(l), false
		}
	}
	return "", false
}

// CauseAbout returns the last error the log reports on a line that names every one of names (a custom
// resource's name and namespace, say) as a whole Kubernetes name, on one line, and true; "" and false
// when no error line names them. It is what an operator said, last, about one object: controller-
// runtime's "Reconciler error" carries the object's name and namespace, and an API error quotes its name.
func CauseAbout(log string, names ...string) (string, bool) {
	words := wholeNames(names)
	lines := splitLines(log)
	for i := len(lines) - 1; i >= 0; i-- {
		if !namesAll(lines[i], words) {
			continue
		}
		if q, ok := errorLine(lines, i); ok {
			return clip(q), true
		}
	}
	return "", false
}

// wholeNames matches each of names as a whole Kubernetes name ("" names nothing and is left out).
func wholeNames(names []string) []*regexp.Regexp {
	words := make([]*regexp.Regexp, 0, len(names))
	for _, n := range names {
		if n != "" {
			// A Kubernetes name is [a-z0-9.-]: "w1" must not match "w10" or "ns-w1".
			words = append(words, regexp.MustCompile(`(^|[^a-zA-Z0-9.-])`+regexp.QuoteMeta(n)+`($|[^a-zA-Z0-9.-])`))
		}
	}
	return words
}

func namesAll(line string, words []*regexp.Regexp) bool {
	for _, w := range words {
		if !w.MatchString(line) {
			return false
		}
	}
	return true
}

// LastLine is the log's last line that is not part of a stack trace and names every one of names as
// whole names (none: any line), a structured one as its time, logger and message; "" when there is
// none. Without names: how an operator that logged no error ended, e.g. controller-runtime's "Wait
// completed, proceeding to shutdown the manager" after a SIGTERM; with an object's name and namespace:
// what the operator last did with it, e.g. "removed finalizer".
func LastLine(log string, names ...string) string {
	words := wholeNames(names)
	lines := splitLines(log)
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || stackLine(lines[i]) || !namesAll(lines[i], words) {
			continue
		}
		var m map[string]any
		if strings.HasPrefix(l, "{") && json.Unmarshal([]byte(l), &m) == nil {
			var parts []string
			for _, k := range []string{"ts", "time", "logger", "msg", "message"} {
				if v, ok := m[k].(string); ok && v != "" {
					parts = append(parts, v)
				}
			}
			if len(parts) > 0 {
				return clip(strings.Join(parts, " "))
			}
		}
		return clip(l)
	}
	return ""
}

// Describe is Cause for a failure message: "the last error it logged: <line>", or "its last output (no
// line of it reports an error): <line>" when it found none, or "it wrote nothing".
func Describe(log string) string {
	q, ok := Cause(log)
	switch {
	case ok:
		return "the last error it logged: " + q
	case q != "":
		return "its last output (no line of it reports an error): " + q
	}
	return "it wrote nothing"
}

var (
	// zap's console encoder: "<time>\tERROR\t<logger>\t<message>\t{<fields>}".
	zapConsole = regexp.MustCompile(`(^|\t)(ERROR|DPANIC|PANIC|FATAL)\t`)
	// klog's header: "E0102 15:04:05.000000   12345 file.go:123] message" (F for fatal).
	klogHeader = regexp.MustCompile(`^[EF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [^\]]+\] `)
	// logfmt (logrus, slog's text handler): level=error.
	logfmtLevel = regexp.MustCompile(`(?i)(^|\s)level=("?)(error|fatal|panic|dpanic|critical)("?)(\s|$)`)
	// zap's console time stamps and ISO times that start a line.
	leadingTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?\s+`)
)

// errorLine says whether lines[i] reports an error, and quotes it.
func errorLine(lines []string, i int) (string, bool) {
	raw := lines[i]
	l := strings.TrimSpace(raw)
	switch {
	case l == "":
		return "", false
	case strings.HasPrefix(l, "{"):
		return jsonError(l)
	case strings.HasPrefix(l, "panic: "), strings.HasPrefix(l, "fatal error: "):
		// A panic's signal line ("[signal SIGSEGV: ...]") follows it and says which fault.
		if i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "[signal ") {
			return l + " " + strings.TrimSpace(lines[i+1]), true
		}
		return l, true
	case zapConsole.MatchString(raw):
		return strings.Join(strings.Fields(strings.ReplaceAll(leadingTime.ReplaceAllString(l, ""), "\t", " ")), " "), true
	case klogHeader.MatchString(l), logfmtLevel.MatchString(l):
		return l, true
	}
	return "", false
}

// jsonError reads a structured line (zap's JSON encoder, logr's, slog's, klog's JSON format): an
// error when its level says so, or, without a level, when it carries an error field (klog's ErrorS
// writes "err" and no level).
func jsonError(l string) (string, bool) {
	var m map[string]any
	if json.Unmarshal([]byte(l), &m) != nil {
		return "", false
	}
	level := ""
	for _, k := range []string{"level", "lvl", "severity"} {
		if v, ok := m[k].(string); ok {
			level = strings.ToLower(v)
			break
		}
	}
	errText := ""
	for _, k := range []string{"error", "err"} {
		if v, ok := m[k]; ok && v != nil {
			errText = fmt.Sprint(v)
			break
		}
	}
	switch level {
	case "error", "dpanic", "panic", "fatal", "critical":
	case "":
		if errText == "" {
			return "", false
		}
	default:
		return "", false
	}
	var parts []string
	msg, _ := m["msg"].(string)
	if msg == "" {
		msg, _ = m["message"].(string)
	}
	if logger, _ := m["logger"].(string); logger != "" && msg != "" {
		msg = logger + ": " + msg
	}
	for _, p := range []string{msg, errText} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return l, true
	}
	return strings.Join(parts, ": "), true
}

// stackLine says whether a line is part of a stack trace or a goroutine dump: a frame's file and line
// (indented), a function ("main.main", "sigs.k8s.io/x/pkg.(*T).Start"), "goroutine 1 [running]:",
// "created by ...".
func stackLine(raw string) bool {
	if strings.HasPrefix(raw, "\t") || strings.HasPrefix(raw, "    ") {
		return true
	}
	l := strings.TrimSpace(raw)
	switch {
	case strings.HasPrefix(l, "goroutine ") && strings.HasSuffix(l, ":"),
		strings.HasPrefix(l, "created by "),
		strings.HasPrefix(l, "[signal "):
		return true
	}
	// A function frame: a dotted name with no space outside its argument list, e.g. "main.main",
	// "main.run(0xc000123456, 0x1)", "k8s.io/x/pkg.(*T).Start.func1()".
	name := l
	if i := strings.Index(l, "("); i > 0 && strings.HasSuffix(l, ")") && !strings.HasPrefix(l[i:], "(*") {
		name = l[:i]
	}
	return strings.Contains(name, ".") && !strings.ContainsAny(name, " \t\"'{}=:")
}

// splitLines splits a log into its lines, whichever line ends it uses.
func splitLines(log string) []string {
	return strings.Split(strings.ReplaceAll(log, "\r\n", "\n"), "\n")
}

func clip(s string) string {
	if len(s) <= maxQuote {
		return s
	}
	return s[:maxQuote] + "…"
}

// The local runtime's Deployment condition says how often the operator exited in this form, which
// the OLM waits read back (ExitsIn) to stop waiting for an operator that crash-loops: the runtime
// runs in one test process, the waits may run in another (ginkgo -p), so the API is the channel.
const exitedFormat = "operator exited %d time(s), "

var exitedPattern = regexp.MustCompile(`operator exited (\d+) time\(s\)`)

// ExitedMessage is the local runtime's message for an operator that exited exits times: cause says
// why it last did (its exit status and Describe of its log).
func ExitedMessage(exits int, cause string) string {
	return fmt.Sprintf(exitedFormat, exits) + cause
}

// ExitsIn reads how often the operator exited from a message ExitedMessage made.
func ExitsIn(message string) (int, bool) {
	m := exitedPattern.FindStringSubmatch(message)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}
