// Command joiner is Joiner's one binary: a node autoscaler for Kubernetes that
// speaks karpenter.sh/v1, and the tools around it.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newRootCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		code, say := exitCode(err)
		if say {
			fmt.Fprintln(os.Stderr, "joiner:", err)
		}
		os.Exit(code)
	}
}
