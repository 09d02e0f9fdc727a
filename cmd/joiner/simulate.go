package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

func newSimulateCommand() *cobra.Command {
	var jsonOut, quiet bool
	var reportFile, compare, decisions, minValuesPolicy string
	cmd := &cobra.Command{
		Use:   "simulate [SCENARIO_DIR]",
		Short: "Simulate what a set of NodePools would do: cost, pod start latency, disruption",
		Long: `simulate runs Joiner's real provisioning, disruption and termination code against
an in-memory cluster and a simulated EC2 (from the bundled instance-type
catalog; spot prices are synthetic) on a virtual clock, driven by the
workload manifests in SCENARIO_DIR and its scenario.yaml. With no directory
it runs the bundled default scenario: the production architecture of the
Karpenter course over one simulated Monday.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			choices, err := parseChoices(decisions, minValuesPolicy)
			if err != nil {
				return err
			}
			a, err := runScenario(args, choices, quiet || jsonOut, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var b *sim.Report
			if compare != "" {
				b, err = runScenario([]string{compare}, choices, quiet || jsonOut, cmd.ErrOrStderr())
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
					for _, w := range sim.ComparisonWarnings(a, b) { // stdout stays JSON
						fmt.Fprintln(cmd.ErrOrStderr(), w)
					}
					return enc.Encode(map[string]*sim.Report{"a": a, "b": b})
				}
				return enc.Encode(a)
			}
			if b != nil {
				sim.WriteComparison(out, a, b)
			} else {
				sim.WriteSummary(out, a)
			}
			if reportFile != "" {
				fmt.Fprintf(out, "\nreport: %s\n", reportFile)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the report as JSON (deterministic for a scenario and seed)")
	cmd.Flags().StringVar(&reportFile, "report", "", "write an HTML report with charts to this file")
	cmd.Flags().StringVar(&compare, "compare", "", "run a second scenario directory and compare the two")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	registerChoices(cmd, &decisions, &minValuesPolicy)
	return cmd
}

// The --decisions and --min-values-policy flags' help, the same for every
// command.
const (
	decisionsHelp = "whose choices to make where Joiner and Karpenter differ: joiner (never dearer than Karpenter's on a batch) or karpenter (upstream's, to predict what Karpenter will do)"
	minValuesHelp = "upstream's MIN_VALUES_POLICY: Strict (a NodePool whose minValues a claim cannot keep leaves the pod to the next) or BestEffort (the minimum is lowered and the NodeClaim marked)"
)

// registerChoices adds --decisions and --min-values-policy.
func registerChoices(cmd *cobra.Command, decisions, minValuesPolicy *string) {
	cmd.Flags().StringVar(decisions, "decisions", string(provisioning.DecisionsJoiner), decisionsHelp)
	cmd.Flags().StringVar(minValuesPolicy, "min-values-policy", string(provisioning.MinValuesStrict), minValuesHelp)
}

// choices are the engine's options the flags set.
type choices struct {
	decisions provisioning.Decisions
	minValues provisioning.MinValuesPolicy
}

func parseChoices(decisions, minValuesPolicy string) (choices, error) {
	d, err := provisioning.ParseDecisions(decisions)
	if err != nil {
		return choices{}, fmt.Errorf("--decisions: %w", err)
	}
	m, err := provisioning.ParseMinValuesPolicy(minValuesPolicy)
	if err != nil {
		return choices{}, fmt.Errorf("--min-values-policy: %w", err)
	}
	return choices{decisions: d, minValues: m}, nil
}

func runScenario(args []string, c choices, quiet bool, progressOut io.Writer) (*sim.Report, error) {
	arg := ""
	if len(args) > 0 {
		arg = args[0]
	}
	fsys, dir, name, err := scenarioFS(arg)
	if err != nil {
		return nil, err
	}
	in, err := sim.Load(fsys, dir, name)
	if err != nil {
		return nil, err
	}
	opts := sim.Options{Decisions: c.decisions, MinValuesPolicy: c.minValues}
	if !quiet && isTerminal(progressOut) {
		bar := progressbar.NewOptions(100, progressbar.OptionSetWriter(progressOut), progressbar.OptionSetDescription("simulating "+name),
			progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(30))
		opts.Progress = func(f float64) { _ = bar.Set(int(f * 100)) }
		defer func() { _ = bar.Finish() }()
	}
	return sim.Run(in, fsys, dir, opts)
}

// isTerminal reports whether w is a terminal a progress bar may redraw: a
// pipe, a file or a CI log gets no bar (and TERM=dumb none either).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && os.Getenv("TERM") != "dumb" && term.IsTerminal(int(f.Fd()))
}
