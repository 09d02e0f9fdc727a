// Command joiner is Joiner's one binary: a node autoscaler for Kubernetes that
// speaks karpenter.sh/v1, and the tools around it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// The first interrupt ends the commands' context (a simulation or a
	// search stops and says where); a second one ends the process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := newRootCommand(os.Stdout, os.Stderr).ExecuteContext(ctx)
	stop()
	if err != nil {
		code, say := exitCode(err)
		if say {
			fmt.Fprintln(os.Stderr, "joiner:", err)
		}
		os.Exit(code)
	}
}
