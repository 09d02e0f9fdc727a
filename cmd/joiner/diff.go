package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/joiner-autoscaler/joiner/pkg/lint"
)

func newDiffCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "diff DIR_A DIR_B",
		Short: "Compare two clusters' NodePools and NodeClasses side by side",
		Long: `diff reads the NodePools, EC2NodeClasses and NodeOverlays below two directories (one
cluster's manifests each, as kept in Git: clusters/staging, clusters/production),
applies the CRDs' defaults to both, and lists resources present in one only,
names that differ only in case or by a suffix (gpu / gpu-pool: non-uniform
names, compared with each other), and every field that differs, by dotted
path (requirements and taints indexed by their key), with both values.

Output: an aligned table, or -o json. Exit status: 0 the same, 1 different,
2 the comparison could not be made (a missing directory, an invalid object).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd.OutOrStdout(), args[0], args[1], output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return cmd
}

func runDiff(out io.Writer, dirA, dirB, output string) error {
	if output != "table" && output != "json" {
		return couldNotRun(fmt.Errorf("-o %q: use table or json", output))
	}
	l, err := lint.New()
	if err != nil {
		return couldNotRun(err)
	}
	a, err := l.LoadResources(dirA)
	if err != nil {
		return couldNotRun(err)
	}
	b, err := l.LoadResources(dirB)
	if err != nil {
		return couldNotRun(err)
	}
	d := lint.Diff(dirA, a, dirB, b)
	if output == "json" {
		err = lint.WriteDiffJSON(out, d)
	} else {
		err = lint.WriteDiffTable(out, d)
	}
	if err != nil {
		return couldNotRun(err)
	}
	if !d.Empty() {
		return &exitError{code: 1}
	}
	return nil
}
