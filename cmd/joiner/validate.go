package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/tune"
)

func newValidateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate PATH...",
		Short: "Validate NodePool, NodeClaim and EC2NodeClass manifests offline, as the API server would",
		Long: `validate checks every YAML document in the given files and directories ("-"
reads standard input) against Joiner's CRDs: OpenAPI schema, defaults, unknown
fields and CEL rules, with the API server's own libraries, all problems of a
document at once. Input from older Karpenter APIs (karpenter.sh/v1beta1,
v1alpha5 Provisioners, AWSNodeTemplates, ...) and removed fields
(WhenUnderutilized, ttlSecondsAfterEmpty, ...) is answered with its exact v1
replacement.

It also reads what "joiner simulate" reads from a directory — Deployments,
StatefulSets, DaemonSets, Jobs, CronJobs, HPAs, PDBs, PriorityClasses,
Services, Pods and scenario.yaml — as strictly as the simulator does, and
reports objects defined twice (in one directory, or in one scenario directory
as simulate loads it) and NodePools naming an EC2NodeClass that none of the
files defines.
Other kinds are counted and skipped.

It exits non-zero if any problem is found, if a path does not exist, or if a
path holds no Karpenter object at all. Warnings (what upstream Karpenter
accepts and Joiner does not model yet) are printed but do not fail.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(cmd.OutOrStdout(), cmd.InOrStdin(), args)
		},
	}
}

// validation is one run of validate over its paths.
type validation struct {
	v                                      *manifest.Validator
	problems                               manifest.Problems
	karpenter, workloads, scenarios, other int
	// byCluster are the documents read, by the directory that holds one
	// cluster's manifests, for objects defined twice; valid are the
	// Karpenter objects that passed, for references between them.
	byCluster map[string][]*manifest.Document
	clusters  []string
	valid     []*manifest.Document
}

// clusterOf is the directory whose manifests are one cluster's, for file f
// given as (or found below) arg: the nearest directory up to arg that holds a
// scenario.yaml (a scenario, loaded whole by simulate), else f's own
// directory. So clusters/staging and clusters/production may both have a
// NodePool "general", and two files side by side may not.
func clusterOf(arg, f string) string {
	if f == "-" {
		return "<stdin>"
	}
	dir := filepath.Dir(f)
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "scenario.yaml")); err == nil {
			return d
		}
		if d == filepath.Clean(arg) || d == filepath.Dir(d) || !strings.HasPrefix(d, filepath.Clean(arg)) {
			return dir
		}
	}
}

func runValidate(out io.Writer, stdin io.Reader, args []string) error {
	v, err := manifest.NewValidator()
	if err != nil {
		return err
	}
	r := &validation{v: v, byCluster: map[string][]*manifest.Document{}}
	for _, arg := range args {
		if err := r.path(arg, stdin); err != nil {
			return err
		}
	}
	for _, c := range r.clusters {
		r.problems = append(r.problems, manifest.Duplicates(r.byCluster[c])...)
	}
	r.problems = append(r.problems, manifest.DanglingNodeClassRefs(r.valid, "the validated files")...)

	errs := r.problems.Errors()
	for _, p := range r.problems {
		fmt.Fprintln(out, p.Error())
	}
	fmt.Fprintf(out, "%s, %s and %s checked, %d of other kinds skipped: %s",
		plural(r.karpenter, "Karpenter object"), plural(r.workloads, "workload object"), plural(r.scenarios, "scenario"), r.other, plural(len(errs), "problem"))
	if w := len(r.problems) - len(errs); w > 0 {
		fmt.Fprintf(out, ", %s", plural(w, "warning"))
	}
	fmt.Fprintln(out)
	if len(errs) > 0 {
		return fmt.Errorf("%s found", plural(len(errs), "problem"))
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// check validates one document by its kind.
func (r *validation) check(d *manifest.Document) {
	switch {
	case manifest.IsKarpenter(d):
		r.karpenter++
		ps := r.v.Validate(d)
		r.problems = append(r.problems, ps...)
		if len(ps.Errors()) == 0 {
			r.valid = append(r.valid, d)
		}
	case scenario.IsScenarioDocument(d):
		r.scenarios++
		check := scenario.CheckScenario
		if tune.IsSpaceDocument(d) {
			check = tune.CheckSpace
		}
		if err := check(d); err != nil {
			var ps manifest.Problems
			if errors.As(err, &ps) {
				r.problems = append(r.problems, ps...)
			} else {
				r.problems = append(r.problems, manifest.Problem{File: d.File, Line: d.Line, Doc: d.Doc, Kind: d.Kind, Name: d.Name, Message: err.Error()})
			}
		}
	case manifest.IsBuiltin(d):
		r.workloads++
		_, ps := manifest.DecodeBuiltin(d)
		r.problems = append(r.problems, ps...)
	default:
		r.other++
		if _, ok := manifest.Unmodelled(d.Kind); ok {
			r.problems = append(r.problems, manifest.Problem{File: d.File, Line: d.Line, Doc: d.Doc, Kind: d.Kind, Name: d.Name,
				Message: manifest.WhyIgnored(d.APIVersion, d.Kind) + "; simulate, plan and explain name it among what they leave out", Warning: true})
		}
	}
}

// path validates one argument: a file, a directory, or "-" for stdin.
// Its complexity is one case per kind of argument (stdin, file,
// directory) and per outcome, each with its own message.
func (r *validation) path(arg string, stdin io.Reader) error {
	var files []string
	if arg != "-" {
		var err error
		files, err = manifest.ManifestFiles(arg)
		if errors.Is(err, fs.ErrNotExist) {
			wd, _ := os.Getwd()
			r.problems = append(r.problems, manifest.Problem{File: arg, Message: "no such file or directory",
				Fix: "check the path (relative paths start at " + wd + ")"})
			return nil
		}
		if err != nil {
			return err
		}
		if len(files) == 0 {
			r.problems = append(r.problems, manifest.Problem{File: arg, Message: "no .yaml or .yml file here, so nothing was checked",
				Fix: "name the directory or files that hold your NodePools"})
			return nil
		}
	}
	karpenter, docsSeen, unreadable := 0, 0, false
	// Each file document by document (manifest.Each): a big file's
	// content is never all in memory.
	walk := func(name string, fn func(*manifest.Document) error) error {
		if name == "-" {
			b, err := io.ReadAll(stdin)
			if err != nil {
				return fmt.Errorf("reading standard input: %w", err)
			}
			return manifest.Each("<stdin>", b, fn)
		}
		return manifest.EachInFile(name, fn)
	}
	if arg == "-" {
		files = []string{"-"}
	}
	for _, f := range files {
		cluster := clusterOf(arg, f)
		if _, ok := r.byCluster[cluster]; !ok {
			r.clusters = append(r.clusters, cluster)
		}
		err := walk(f, func(d *manifest.Document) error {
			docsSeen++
			r.byCluster[cluster] = append(r.byCluster[cluster], d.Header())
			if manifest.IsKarpenter(d) {
				karpenter++
			}
			r.check(d)
			return nil
		})
		var ps manifest.Problems
		if errors.As(err, &ps) {
			r.problems = append(r.problems, ps...)
			unreadable = true
			continue
		} else if err != nil {
			return err
		}
	}
	if karpenter == 0 && !unreadable {
		name := arg
		if arg == "-" {
			name = "<stdin>"
		}
		r.problems = append(r.problems, manifest.Problem{File: name,
			Message: fmt.Sprintf("no Karpenter object here (NodePool, NodeClaim, EC2NodeClass, or an older Karpenter API) in %d files, %d documents", len(files), docsSeen),
			Fix:     "check the path: joiner validate takes the files or directories that hold your NodePools"})
	}
	return nil
}
