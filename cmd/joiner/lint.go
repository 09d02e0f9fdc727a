package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/joiner-autoscaler/joiner/pkg/lint"
)

// exitError carries an exit code other than 1 (or a 1 with nothing more
// to print) to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// couldNotRun is exit code 2: the command could not do its job.
func couldNotRun(err error) error { return &exitError{code: 2, err: err} }

type lintFlags struct {
	output, failOn, config string
	fix                    bool
}

func newLintCommand() *cobra.Command {
	var f lintFlags
	cmd := &cobra.Command{
		Use:   "lint PATH...",
		Short: "Check NodePool and EC2NodeClass manifests for errors, old API input and risky practice",
		Long: `lint reads every YAML document in the given files and directories and reports,
each with a rule ID, a severity and a one-line fix:

` + ruleList() + `
Files named directly are one set of manifests; a directory is one set, split
at every directory below it that holds a scenario.yaml or kustomization.yaml
(one cluster). References, equal weights, PDBs and duplicates are judged
within a set.

Output: text (file:line:column: severity ID message), -o json, -o sarif
(SARIF 2.1.0, for code scanning). Exit status: 0 clean, 1 findings at or
above --fail-on (default error), 2 the lint could not run.

Silencing: .joiner-lint.yaml in the working directory (or --config FILE):
  rules: {JNR006: off}                                  # everywhere
  ignore: [{rules: [JNR007], kind: NodePool, name: spot, files: "clusters/staging/*"}]
or on the resource itself:
  metadata.annotations: {joiner.sh/lint-ignore: "JNR004,JNR005"}

--fix rewrites old-API input (JNR002) to its v1 form in place, keeping
comments and order; what it cannot rewrite stays reported.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLint(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, f)
		},
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "text, json or sarif")
	cmd.Flags().StringVar(&f.failOn, "fail-on", "error", "exit 1 on findings at or above this severity: error, warning, note, or none")
	cmd.Flags().StringVar(&f.config, "config", "", "lint config file (default "+lint.DefaultConfigFile+" in the working directory, if there is one)")
	cmd.Flags().BoolVar(&f.fix, "fix", false, "rewrite old-API fields to their v1 form in the files, keeping comments")
	return cmd
}

func ruleList() string {
	s := ""
	for _, r := range lint.Rules {
		s += fmt.Sprintf("  %s %-7s %s\n", r.ID, r.Severity, r.Summary)
	}
	return s
}

func runLint(out, errOut io.Writer, args []string, f lintFlags) error {
	failOn, ok := lint.ParseSeverity(f.failOn)
	if !ok && f.failOn != "none" {
		return couldNotRun(fmt.Errorf("--fail-on %q: use error, warning, note or none", f.failOn))
	}
	if f.output != "text" && f.output != "json" && f.output != "sarif" {
		return couldNotRun(fmt.Errorf("-o %q: use text, json or sarif", f.output))
	}
	load, cfgPath := lint.LoadConfig, f.config
	if cfgPath == "" {
		load, cfgPath = lint.LoadConfigIfPresent, lint.DefaultConfigFile
	}
	cfg, err := load(cfgPath)
	if err != nil {
		return couldNotRun(err)
	}
	l, err := lint.New()
	if err != nil {
		return couldNotRun(err)
	}
	if f.fix {
		fixed, err := l.Fix(args)
		if err != nil {
			return couldNotRun(err)
		}
		for _, fx := range fixed {
			fmt.Fprintf(errOut, "fixed %s:\n", fx.File)
			for _, a := range fx.Applied {
				fmt.Fprintf(errOut, "    %s\n", a)
			}
			for _, a := range fx.Left {
				fmt.Fprintf(errOut, "    left: %s\n", a)
			}
		}
	}
	res, err := l.Lint(args, cfg)
	if err != nil {
		return couldNotRun(err)
	}
	switch f.output {
	case "json":
		err = lint.WriteJSON(out, res)
	case "sarif":
		err = lint.WriteSARIF(out, res, resolveVersion())
	default:
		err = lint.WriteText(out, res)
	}
	if err != nil {
		return couldNotRun(err)
	}
	if f.failOn != "none" && res.Count(failOn) > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// exitCode is the status for an error RunE returned.
func exitCode(err error) (int, bool) {
	var e *exitError
	if errors.As(err, &e) {
		return e.code, e.err != nil
	}
	return 1, true
}
