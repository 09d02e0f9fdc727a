package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot/vg"
	"sigs.k8s.io/yaml"

	"github.com/joiner-autoscaler/joiner/pkg/htmlreport"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
	"github.com/joiner-autoscaler/joiner/pkg/tune"
)

type tuneFlags struct {
	space, report, chart, write, emitJob, image, jobName, namespace, variantIndex string
	sampler                                                                       string
	policy                                                                        policyFlags
	maxVariants, samples, seeds, workers, parallelism                             int
	sampleSeed                                                                    int64
	jsonOut, quiet, gather                                                        bool
}

func newTuneCommand() *cobra.Command {
	var f tuneFlags
	cmd := &cobra.Command{
		Use:   "tune [SCENARIO_DIR] --space SPACE.yaml",
		Short: "Search NodePool settings for the cheapest that keep pods starting fast: the Pareto front over simulated runs",
		Long: `tune runs the scenario (as simulate reads it; no directory: the bundled one)
once for every variant of the NodePools that SPACE.yaml, a joiner.dev/v1alpha1
TuningSpace, describes: exhaustively for a space of at most --max-variants,
else a seeded sample (Latin hypercube or random) thinned by successive halving
over a quarter, a half and all of the scenario's duration. Variants run in
parallel, each a full deterministic simulation with the scenario's seed. It
prints the Pareto front over cost, p99 pod startup, disruptions per node-day
and pods that never ran among the variants meeting the space's constraints,
the baseline (the NodePools as they are) marked; re-runs the front and the
baseline over --seeds seeds, and chooses on the mean.

--write DIR writes the chosen variant's manifests (only the tuned fields
changed, comments kept) and prints a diff. --emit-job writes a ConfigMap and
a Kubernetes Indexed Job whose pods run one variant each
(--variant-index $(JOB_COMPLETION_INDEX), or "env" to read the variable)
and print a JSON line; --gather
merges those lines (the pods' logs) into the same output as a local search.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runTune(cmd, args, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.space, "space", "", "the TuningSpace file: the knobs to vary, objectives and constraints")
	fl.IntVar(&f.maxVariants, "max-variants", 0, "search a space of at most this many variants exhaustively, else sample (default: the space's search.maxVariants, else 64)")
	fl.IntVar(&f.samples, "samples", 0, "variants to sample from a larger space (default: the space's search.samples, else --max-variants)")
	fl.StringVar(&f.sampler, "sampler", "", "latinHypercube or random (default: the space's, else latinHypercube)")
	fl.Int64Var(&f.sampleSeed, "sample-seed", 0, "the sampler's seed (default: the space's search.seed, else the scenario's seed)")
	fl.IntVar(&f.seeds, "seeds", 0, "seeds each finalist is run over, from the scenario's (default: the space's search.seeds, else 3)")
	fl.IntVar(&f.workers, "workers", runtime.NumCPU(), "simulations run at once")
	fl.BoolVar(&f.jsonOut, "json", false, "print the result as JSON (deterministic for a scenario, space and seed)")
	fl.StringVar(&f.report, "report", "", "write an HTML report with a cost vs p99 startup chart to this file")
	fl.StringVar(&f.chart, "chart", "", "write the cost vs p99 startup chart alone to this file (.png or .svg)")
	fl.StringVar(&f.write, "write", "", "write the chosen variant's edited manifests below this directory and print a diff against the input")
	fl.StringVar(&f.emitJob, "emit-job", "", `write a ConfigMap and an Indexed Job that run the search on a cluster to this file ("-": stdout)`)
	fl.StringVar(&f.image, "image", "ghcr.io/joiner-autoscaler/joiner:v0.1.0", "the Job's container image (Joiner's, with /joiner)")
	fl.StringVar(&f.jobName, "job-name", "joiner-tune", "the Job's name (the ConfigMap is NAME-input)")
	fl.StringVar(&f.namespace, "namespace", "", "the Job's namespace (default: kubectl's)")
	fl.IntVar(&f.parallelism, "parallelism", 0, "the Job's parallelism (default: every variant at once)")
	fl.StringVar(&f.variantIndex, "variant-index", "", "run only this variant over every seed and print its JSON line (what a Job's pod does; the Job passes $(JOB_COMPLETION_INDEX))")
	fl.BoolVar(&f.gather, "gather", false, "merge the JSON lines in the files given as arguments (a Job's pod logs; - for stdin) into the search's result")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar")
	f.policy.register(cmd)
	return cmd
}

func runTune(cmd *cobra.Command, args []string, f tuneFlags) error {
	simulationGC()
	out := cmd.OutOrStdout()
	if f.gather {
		return runGather(cmd, args, f)
	}
	if err := f.check(args); err != nil {
		return err
	}
	policy, err := f.policy.policy()
	if err != nil {
		return err
	}
	plan, spaceData, name, err := loadTunePlan(args, f)
	if err != nil {
		return err
	}
	opts := tune.Options{MaxVariants: f.maxVariants, Samples: f.samples, Sampler: f.sampler, Seeds: f.seeds, Workers: f.workers,
		Sim: sim.Options{Policy: policy}}
	if cmd.Flags().Changed("sample-seed") {
		opts.SampleSeed = &f.sampleSeed
	}
	switch {
	case f.variantIndex != "":
		return runVariantIndex(cmd, plan, opts, f.variantIndex)
	case f.emitJob != "":
		return emitJob(cmd, plan, opts, f, spaceData, policy)
	}
	if !f.quiet && !f.jsonOut && isTerminal(cmd.ErrOrStderr()) {
		bar := newBar(cmd.ErrOrStderr(), "tuning "+name)
		opts.Progress = func(done, total int) { _ = bar.Set(min(100, 100*done/max(total, 1))) }
		defer func() { _ = bar.Finish() }()
	}
	res, err := plan.Search(cmd.Context(), opts)
	if err != nil {
		return err
	}
	if err := tuneOutput(out, res, f); err != nil {
		return err
	}
	if f.write != "" {
		return writeChosen(out, plan, res, f)
	}
	return nil
}

// runGather is --gather: the results of an Indexed Job's variants, merged.
func runGather(cmd *cobra.Command, args []string, f tuneFlags) error {
	if len(args) == 0 {
		return errors.New("--gather: name the files of JSON lines (the Job's pod logs), or - for stdin")
	}
	if f.write != "" {
		return errors.New("--write is for a local search (it edits the scenario's files): run `joiner tune DIR --space SPACE --write OUT`")
	}
	res, err := gatherFiles(args, cmd.InOrStdin())
	if err != nil {
		return err
	}
	return tuneOutput(cmd.OutOrStdout(), res, f)
}

// check is what the flags of a search say on their own.
func (f *tuneFlags) check(args []string) error {
	if f.space == "" {
		return errors.New("--space: name the TuningSpace file (see `joiner tune --help`)")
	}
	if len(args) > 1 {
		return fmt.Errorf("one scenario directory, not %d", len(args))
	}
	switch f.sampler {
	case "", tune.SamplerLatinHypercube, tune.SamplerRandom:
	default:
		return fmt.Errorf("--sampler %q: use %s or %s", f.sampler, tune.SamplerLatinHypercube, tune.SamplerRandom)
	}
	if f.maxVariants < 0 || f.samples < 0 || f.seeds < 0 {
		return errors.New("--max-variants, --samples and --seeds must not be negative (0: the space's setting)")
	}
	if len(args) == 1 && inside(args[0], f.space) {
		return fmt.Errorf("--space %s is inside the scenario directory %s, whose YAML files are all read as the scenario: move it out", f.space, args[0])
	}
	return nil
}

// loadTunePlan reads the space and the scenario: the plan, the space's
// bytes (an emitted Job carries them) and the scenario's name.
func loadTunePlan(args []string, f tuneFlags) (*tune.Plan, []byte, string, error) {
	spaceData, err := os.ReadFile(f.space)
	if err != nil {
		return nil, nil, "", fmt.Errorf("--space: %w", err)
	}
	space, err := tune.ParseSpace(f.space, spaceData)
	if err != nil {
		return nil, nil, "", err
	}
	fsys, dir, name, err := scenarioFS(firstArg(args))
	if err != nil {
		return nil, nil, "", err
	}
	in, err := scenario.Load(fsys, dir, name)
	if err != nil {
		return nil, nil, "", err
	}
	plan, err := tune.NewPlan(in, fsys, dir, space)
	return plan, spaceData, name, err
}

// runVariantIndex is --variant-index: one variant of an Indexed Job, its
// result as a JSON line.
func runVariantIndex(cmd *cobra.Command, plan *tune.Plan, opts tune.Options, index string) error {
	idx := index
	if idx == "$(JOB_COMPLETION_INDEX)" || idx == "env" { // not expanded: read what the Job controller sets
		idx = os.Getenv("JOB_COMPLETION_INDEX")
	}
	i, err := strconv.Atoi(idx)
	if err != nil {
		return fmt.Errorf("--variant-index %q: not a number (a Job passes $(JOB_COMPLETION_INDEX), which the kubelet expands)", index)
	}
	l, err := plan.RunIndex(cmd.Context(), opts, i)
	if err != nil {
		return err
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
	return err
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// inside reports whether file is below dir.
func inside(dir, file string) bool {
	d, err1 := filepath.Abs(dir)
	f, err2 := filepath.Abs(file)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, f)
	return err == nil && !strings.HasPrefix(rel, "..")
}

func tuneOutput(out io.Writer, res *tune.Result, f tuneFlags) error {
	if f.report != "" {
		if err := writeTuneHTML(f.report, res); err != nil {
			return err
		}
	}
	if f.chart != "" {
		p, err := htmlreport.TuneChart(res)
		if err != nil {
			return err
		}
		if err := p.Save(6*vg.Inch, 3.5*vg.Inch, f.chart); err != nil {
			return fmt.Errorf("--chart: %w", err)
		}
	}
	if f.jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	res.WriteTable(out)
	if f.report != "" {
		fmt.Fprintf(out, "\nreport: %s\n", f.report)
	}
	return nil
}

func writeTuneHTML(path string, res *tune.Result) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := htmlreport.WriteTune(file, res); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

func writeChosen(out io.Writer, plan *tune.Plan, res *tune.Result, f tuneFlags) error {
	c := res.Chose()
	if c == nil || c.Baseline {
		fmt.Fprintf(out, "\n--write: nothing written: %s\n", map[bool]string{true: "the baseline was chosen", false: "no variant was chosen"}[c != nil])
		return nil
	}
	v := res.Variant(c.Index)
	files, err := plan.EditFiles(tune.Variant{Index: v.Index, Choice: v.Choice})
	if err != nil {
		return err
	}
	diff, err := tune.WriteFiles(f.write, files)
	if err != nil {
		return err
	}
	w := out
	if f.jsonOut {
		w = os.Stderr // stdout stays JSON
	}
	fmt.Fprintf(w, "\nwrote variant %d's manifests to %s:\n%s", c.Index, f.write, diff)
	return nil
}

func gatherFiles(names []string, stdin io.Reader) (*tune.Result, error) {
	var readers []io.Reader
	for _, n := range names {
		if n == "-" {
			readers = append(readers, stdin)
			continue
		}
		file, err := os.Open(n)
		if err != nil {
			return nil, fmt.Errorf("--gather: %w", err)
		}
		defer file.Close()
		readers = append(readers, file)
	}
	return tune.Gather(readers...)
}

func emitJob(cmd *cobra.Command, plan *tune.Plan, opts tune.Options, f tuneFlags, space []byte, policy provisioning.Policy) error {
	// One worker: the Job's parallelism spreads the variants, and a pod's
	// seeds in parallel would only share the one CPU it requests.
	args := []string{"--workers", "1", "--decisions", string(policy.Decisions), "--min-values-policy", string(policy.MinValues)}
	for _, fl := range []string{"max-variants", "samples", "sampler", "sample-seed", "seeds"} {
		if cmd.Flags().Changed(fl) {
			args = append(args, "--"+fl, cmd.Flags().Lookup(fl).Value.String())
		}
	}
	cm, job, err := plan.JobObjects(opts, tune.JobSpec{Name: f.jobName, Namespace: f.namespace, Image: f.image, Parallelism: f.parallelism, Args: args}, space)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# joiner tune: %d variants, one per completion index; each pod prints a JSON line.\n", *job.Spec.Completions)
	fmt.Fprintf(&b, "# kubectl apply -f FILE; kubectl wait --for=condition=complete job/%s --timeout=1h\n", job.Name)
	fmt.Fprintf(&b, "# kubectl logs -l job-name=%s --tail=-1 --max-log-requests=%d > lines; joiner tune --gather lines\n", job.Name, min(100, *job.Spec.Completions))
	for i, o := range []any{cm, job} {
		y, err := cleanYAML(o)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	if f.emitJob == "-" {
		_, err = io.WriteString(cmd.OutOrStdout(), b.String())
		return err
	}
	if err := os.WriteFile(f.emitJob, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: ConfigMap %s and Indexed Job %s (%d completions)\n", f.emitJob, cm.Name, job.Name, *job.Spec.Completions)
	return nil
}

// cleanYAML is o as YAML without what only the API server writes (status,
// creationTimestamp: null).
func cleanYAML(o any) ([]byte, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	for _, meta := range []any{m["metadata"], lookupMap(m, "spec", "template", "metadata")} {
		if mm, ok := meta.(map[string]any); ok {
			delete(mm, "creationTimestamp")
		}
	}
	return yaml.Marshal(m)
}

func lookupMap(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}
