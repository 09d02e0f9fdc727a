package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "joiner",
		Short: "A node autoscaler for Kubernetes that speaks karpenter.sh/v1",
		Long: `Joiner turns pending pods into right-sized nodes and takes them away when they
are no longer worth their cost, using Karpenter's karpenter.sh/v1 NodePools.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newVersionCommand(), newValidateCommand(), newSimulateCommand(), newTuneCommand(), newPlanCommand(), newExplainCommand(), newControllerCommand(), newLintCommand(), newDiffCommand(), newDriftCommand(), newRecordCommand(), newBacktestCommand())
	return root
}
