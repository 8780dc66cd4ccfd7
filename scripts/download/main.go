// Command download fetches prebuilt binaries from the conventional online paths, so a machine that can
// reach them need not compile them:
//
//   - file: one release file, checked against the SHA-256 published beside it (Kubernetes' binaries);
//   - image: files out of a container image named by digest, which is the check (OLM's binaries).
//
// It fails saying what it could not reach, and the scripts then build from source. It writes nothing
// unchecked, and replaces an output only once the whole file is there.
//
// Usage:
//
//	download file [-timeout 10m] -o OUT URL              # URL.sha256 holds URL's hex SHA-256
//	download image [-timeout 10m] [-platform linux/amd64] -o DIR REF@sha256:… PATH...  # DIR/<base of PATH>
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"
)

// transport gives up on a host that takes connections but does not answer within seconds, instead of
// waiting for the whole -timeout.
var transport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 15 * time.Second
	t.ResponseHeaderTimeout = 30 * time.Second
	return t
}()

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "download:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, log io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: download file|image [flags] ... (see the package doc)")
	}
	fs := flag.NewFlagSet("download "+args[0], flag.ContinueOnError)
	fs.SetOutput(log)
	out := fs.String("o", "", "the file (file) or directory (image) to write")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long the whole download may take")
	platform := fs.String("platform", "linux/"+runtime.GOARCH, "the platform to take from a multi-platform image")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("download %s: -o is required", args[0])
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	start := time.Now()
	var err error
	switch args[0] {
	case "file":
		if fs.NArg() != 1 {
			return fmt.Errorf("download file: want one URL, got %d arguments", fs.NArg())
		}
		err = file(ctx, fs.Arg(0), *out)
	case "image":
		if fs.NArg() < 2 {
			return fmt.Errorf("download image: want an image reference and at least one path in it")
		}
		err = imageFiles(ctx, fs.Arg(0), *platform, *out, fs.Args()[1:])
	default:
		return fmt.Errorf("unknown mode %q: file or image", args[0])
	}
	if err == nil {
		fmt.Fprintf(log, "download: %s done in %s\n", fs.Arg(0), time.Since(start).Round(100*time.Millisecond))
	}
	return err
}
