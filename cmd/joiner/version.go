package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// release is the version this source tree is released as. The Helm chart
// (charts/joiner/Chart.yaml) pins the same as its version and appVersion;
// version_test.go keeps them together.
const release = "v0.1.0"

// version, when set at link time (-ldflags "-X main.version=v0.1.0"),
// replaces release and the VCS revision in `joiner version`.
var version = ""

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Joiner's version and the API versions it speaks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "joiner %s\napis: karpenter.sh/v1 (NodePool, NodeClaim), karpenter.k8s.aws/v1 (EC2NodeClass)\n", resolveVersion())
			return nil
		},
	}
}

func resolveVersion() string {
	if version != "" {
		return version
	}
	v := release
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}
