package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/joiner-autoscaler/joiner/pkg/replay"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// loadInput loads what a run simulates: the scenario directory arg (the
// bundled default for ""), or, when tracePath is set, that trace replayed
// under arg's NodePools (the recorded ones when arg is "").
func loadInput(tracePath, arg string) (fs.FS, string, *scenario.Input, error) {
	if tracePath == "" {
		fsys, dir, name, err := scenarioFS(arg)
		if err != nil {
			return nil, "", nil, err
		}
		in, err := scenario.Load(fsys, dir, name)
		return fsys, dir, in, err
	}
	rec, err := readRecording(tracePath)
	if err != nil {
		return nil, "", nil, err
	}
	var over *scenario.Input
	fsys, dir := fs.FS(os.DirFS(".")), "."
	if arg != "" {
		var name string
		if fsys, dir, name, err = scenarioFS(arg); err != nil {
			return nil, "", nil, fmt.Errorf("the NodePools to replay %s under: %w", tracePath, err)
		}
		if over, err = scenario.Load(fsys, dir, name); err != nil {
			return nil, "", nil, err
		}
	}
	in, err := rec.Input(tracePath, over)
	return fsys, dir, in, err
}

// readRecording reads a trace file whole.
func readRecording(path string) (*replay.Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	r, err := trace.NewReader(f, path)
	if err != nil {
		return nil, err
	}
	return replay.Read(r)
}

// isTraceFile reports whether arg names a file (a trace) rather than a
// scenario directory.
func isTraceFile(arg string) bool {
	st, err := os.Stat(arg)
	return err == nil && st.Mode().IsRegular()
}

func newBacktestCommand() *cobra.Command {
	var jsonOut, quiet bool
	var reportFile string
	var pf policyFlags
	cmd := &cobra.Command{
		Use:   "backtest TRACE",
		Short: "Replay a recorded cluster under its own NodePools and measure how far the simulation is from what happened",
		Long: `backtest replays a trace (joiner record) under the NodePools, EC2NodeClasses
and NodeOverlays it recorded and holds the simulated cluster against the
recorded one, minute by minute: node count by NodePool and capacity type,
$/h, pods pending and how long they waited. It prints the mean absolute
percentage error of the node count, the total cost error, the p50/p90
pending-time differences and the largest divergences with what each cluster
did before them. Give --decisions karpenter for a cluster upstream Karpenter
ran.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			policy, err := pf.policy()
			if err != nil {
				return err
			}
			simulationGC()
			rec, err := readRecording(args[0])
			if err != nil {
				return err
			}
			opts := sim.Options{Policy: policy}
			if !quiet && !jsonOut && isTerminal(cmd.ErrOrStderr()) {
				bar := newBar(cmd.ErrOrStderr(), "replaying "+args[0])
				opts.Progress = func(f float64) { _ = bar.Set(int(f * 100)) }
				defer func() { _ = bar.Finish() }()
			}
			bt, err := replay.RunBacktest(cmd.Context(), args[0], rec, os.DirFS("."), ".", opts)
			if err != nil {
				return err
			}
			if reportFile != "" {
				if err := writeBacktestHTML(reportFile, bt); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			if jsonOut {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(bt)
			}
			bt.WriteSummary(out)
			if reportFile != "" {
				fmt.Fprintf(out, "\nreport: %s\n", reportFile)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the backtest as JSON: the error figures, both clusters minute by minute, the divergences")
	cmd.Flags().StringVar(&reportFile, "report", "", "write an HTML report with the recorded and simulated timelines on one chart to this file")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	pf.register(cmd)
	return cmd
}
