package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

func newSimulateCommand() *cobra.Command {
	var jsonOut, quiet bool
	var reportFile, compare, replayTrace string
	var pf policyFlags
	cmd := &cobra.Command{
		Use:   "simulate [SCENARIO_DIR | --replay TRACE [NODEPOOLS_DIR]]",
		Short: "Simulate what a set of NodePools would do: cost, pod start latency, disruption",
		Long: `simulate runs Joiner's real provisioning, disruption and termination code against
an in-memory cluster and a simulated EC2 (from the bundled instance-type
catalog; spot prices are synthetic) on a virtual clock, driven by the
workload manifests in SCENARIO_DIR and its scenario.yaml. With no directory
it runs the bundled default scenario: the production architecture of the
Karpenter course over one simulated Monday.

With --replay it runs a trace of a real cluster (joiner record): its pods
come and go, and its workloads scale, as they did, while the simulated
autoscaler decides every node under the NodePools, EC2NodeClasses and
NodeOverlays of NODEPOOLS_DIR (the recorded ones without it); --compare
then names a second directory of NodePools for the same trace.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			policy, err := pf.policy()
			if err != nil {
				return err
			}
			a, err := runScenario(cmd.Context(), replayTrace, args, policy, quiet || jsonOut, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var b *report.Report
			if compare != "" {
				b, err = runScenario(cmd.Context(), replayTrace, []string{compare}, policy, quiet || jsonOut, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
			}
			if reportFile != "" {
				if err := writeHTML(reportFile, a, b); err != nil {
					return err
				}
			}
			if jsonOut {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if b != nil {
					for _, w := range report.ComparisonWarnings(a, b) { // stdout stays JSON
						fmt.Fprintln(cmd.ErrOrStderr(), w)
					}
					return enc.Encode(map[string]*report.Report{"a": a, "b": b})
				}
				return enc.Encode(a)
			}
			if b != nil {
				report.WriteComparison(out, a, b)
			} else {
				report.WriteSummary(out, a)
			}
			if reportFile != "" {
				fmt.Fprintf(out, "\nreport: %s\n", reportFile)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON (deterministic for a scenario and seed)")
	cmd.Flags().StringVar(&reportFile, "report", "", "write an HTML report with charts to this file")
	cmd.Flags().StringVar(&compare, "compare", "", "run a second scenario directory (with --replay: a second directory of NodePools) and compare the two")
	cmd.Flags().StringVar(&replayTrace, "replay", "", "replay a trace `joiner record` wrote, under the NodePools of the directory argument (the recorded ones without it)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	pf.register(cmd)
	return cmd
}

// The --decisions and --min-values-policy flags' help, the same for every
// command.
const (
	decisionsHelp = "whose choices to make where Joiner and Karpenter differ: joiner (never dearer than Karpenter's on a batch) or karpenter (upstream's, to predict what Karpenter will do)"
	minValuesHelp = "upstream's MIN_VALUES_POLICY: Strict (a NodePool whose minValues a claim cannot keep leaves the pod to the next) or BestEffort (the minimum is lowered and the NodeClaim marked)"
)

// policyFlags are --decisions, --min-values-policy and
// --ignore-dra-requests: the engine's provisioning.Policy, the same flags
// on every command that decides.
type policyFlags struct {
	decisions, minValues string
	ignoreDRA            bool
}

// draHelp is --ignore-dra-requests' help, upstream's flag.
const draHelp = "upstream's IGNORE_DRA_REQUESTS: true (the default, as upstream's) launches no node for a pod that asks for devices through Dynamic Resource Allocation; false allocates its ResourceClaims from the DeviceClasses and ResourceSlices, and from a new node's instance-type devices (GPU types: one device per GPU)"

// register adds --decisions, --min-values-policy and --ignore-dra-requests.
func (f *policyFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.decisions, provisioning.FlagDecisions, string(provisioning.DecisionsJoiner), decisionsHelp)
	cmd.Flags().StringVar(&f.minValues, provisioning.FlagMinValues, string(provisioning.MinValuesStrict), minValuesHelp)
	cmd.Flags().BoolVar(&f.ignoreDRA, "ignore-dra-requests", true, draHelp)
}

// policy is the flags' Policy; the error names the flag.
func (f *policyFlags) policy() (provisioning.Policy, error) {
	p, err := provisioning.ParsePolicy(f.decisions, f.minValues)
	p.ModelDRA = !f.ignoreDRA
	return p, err
}

// runScenario runs a scenario (the bundled default when args is empty). A
// run allocates many short-lived scheduling states: the command trades
// memory for less GC work (GOGC 400 unless the environment sets GOGC;
// BenchmarkSimulateWeek20k in pkg/sim shows what it buys).
func runScenario(ctx context.Context, replayTrace string, args []string, policy provisioning.Policy, quiet bool, progressOut io.Writer) (*report.Report, error) {
	simulationGC()
	arg := ""
	if len(args) > 0 {
		arg = args[0]
	}
	fsys, dir, in, err := loadInput(replayTrace, arg)
	if err != nil {
		return nil, err
	}
	name := in.Name
	opts := sim.Options{Policy: policy}
	if !quiet && isTerminal(progressOut) {
		bar := newBar(progressOut, "simulating "+name)
		opts.Progress = func(f float64) { _ = bar.Set(int(f * 100)) }
		defer func() { _ = bar.Finish() }()
	}
	return sim.Run(ctx, in, fsys, dir, opts)
}

// newBar is a long command's progress bar on a terminal: 0–100 %,
// cleared when it finishes.
func newBar(w io.Writer, what string) *progressbar.ProgressBar {
	return progressbar.NewOptions(100, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(30))
}

// isTerminal reports whether w is a terminal a progress bar may redraw: a
// pipe, a file or a CI log gets no bar (and TERM=dumb none either).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && os.Getenv("TERM") != "dumb" && term.IsTerminal(int(f.Fd()))
}

// simulationGC raises the GC percentage to 400 for a command that runs
// simulations, unless GOGC says otherwise: a process-wide setting, so the
// command's to make (sim.Run and tune.Search leave it alone).
func simulationGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}
