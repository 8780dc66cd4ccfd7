package localruntime

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// A pod has its own network namespace, so two operators may both listen on :8081; binaries the runtime
// runs share the machine's. A bind address in the args — the whole value of an argument or of a
// --flag=value, with no host or a wildcard or loopback host, e.g. --health-probe-bind-address=:8081 or
// --metrics-bind-address=0.0.0.0:8443 — is moved to a loopback port the kernel hands out. A port the
// binary opens without naming it in its args (controller-runtime's webhook server, 9443 by default)
// stays as it is and may collide with another operator's.
var bindAddress = regexp.MustCompile(`^(|0\.0\.0\.0|\[::\]|127\.0\.0\.1|localhost):([0-9]{1,5})$`)

// moveBindAddresses returns args with every bind address moved, and where each port went.
func moveBindAddresses(args []string) ([]string, map[int32]string, error) {
	out := make([]string, len(args))
	moved := map[int32]string{}
	for i, a := range args {
		prefix, value := "", a
		if strings.HasPrefix(a, "-") {
			k, v, ok := strings.Cut(a, "=")
			if !ok {
				out[i] = a
				continue
			}
			prefix, value = k+"=", v
		}
		m := bindAddress.FindStringSubmatch(value)
		if m == nil {
			out[i] = a
			continue
		}
		port, err := strconv.ParseInt(m[2], 10, 32)
		if err != nil || port == 0 {
			out[i] = a
			continue
		}
		addr, ok := moved[int32(port)]
		if !ok {
			if addr, err = freeLoopbackAddress(); err != nil {
				return nil, nil, fmt.Errorf("a port for %s: %w", a, err)
			}
			moved[int32(port)] = addr
		}
		out[i] = prefix + addr
	}
	return out, moved, nil
}

// freeLoopbackAddress returns a loopback address with a port the kernel just handed out. Should another
// process take the port before the operator binds it, the operator fails to start and its restart
// gets a new port.
func freeLoopbackAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
