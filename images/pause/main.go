// Command pause is the pod sandbox's init process in the kind node images (the upstream image cannot be
// pulled here): it sleeps until SIGINT or SIGTERM, and reaps the zombies it inherits as PID 1 of a pod
// sharing its PID namespace. Built static (CGO_ENABLED=0) into a FROM-scratch image by
// scripts/kind/build-pause.sh.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

var version = "dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (cleanup-e2e) " + version)
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", s)
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
