package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/examples"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/plan"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// liveTimeout bounds each request to a live cluster, so an address that
// does not answer fails in seconds rather than hanging.
const liveTimeout = 30 * time.Second

// clusterSource is where plan and explain read a cluster from: manifest
// files and directories (the arguments), a live cluster (--kubeconfig), or
// a simulated one at a moment of its run (--scenario, --at).
type clusterSource struct {
	kubeconfig, scenario, at, catalog, region string
	zones                                     []string
}

// register adds the source flags (plan adds registerPlacement's too).
func (s *clusterSource) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.kubeconfig, "kubeconfig", "", "read the cluster behind this kubeconfig instead of manifests (read-only: nothing is written)")
	f.StringVar(&s.scenario, "scenario", "", `simulate this scenario directory ("default": the bundled one), or replay this trace (joiner record), up to --at and read the simulated cluster`)
	f.StringVar(&s.at, "at", "", "as of this RFC 3339 time (default now); with --scenario the simulated time to stop at, RFC 3339 or +DURATION from the start (default the end of the run)")
	f.StringVar(&s.catalog, "catalog", "", "an instance-type catalog file (the embedded EC2 catalog's format) instead of the embedded one (not with --scenario: its own)")
}

// registerPlacement adds --region and --zones.
func (s *clusterSource) registerPlacement(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.region, "region", "", "the cluster's region (default: the nodes' topology.kubernetes.io/region, else us-east-1)")
	f.StringSliceVar(&s.zones, "zones", nil, "the cluster's zones (default: the catalog's for the region)")
}

// clusterInput is a cluster read from a source, and what to say about it.
type clusterInput struct {
	cluster *state.Objects
	now     time.Time
	// notes: what was assumed reading it (catalog defaults).
	notes []string
	// ignored are the documents of kinds not modelled.
	ignored []manifest.Ignored
	// gaveUp: pods the simulator's launch-loop guard gave up on, and why.
	gaveUp map[string]string
	// where says what was read, for errors: "the manifests", …
	where string
}

// read reads the cluster from exactly one of paths, --kubeconfig and
// --scenario; a simulated one grows under the policy the command decides
// with.
func (s *clusterSource) read(ctx context.Context, paths []string, policy provisioning.Policy) (*clusterInput, error) {
	given := 0
	for _, b := range []bool{len(paths) > 0, s.kubeconfig != "", s.scenario != ""} {
		if b {
			given++
		}
	}
	if given != 1 {
		return nil, errors.New("say where the cluster is: manifest files or directories, --kubeconfig FILE for a live cluster, or --scenario DIR --at TIME for a simulated one (one of them)")
	}
	if s.scenario != "" {
		if s.catalog != "" || s.region != "" || len(s.zones) > 0 {
			return nil, errors.New("--catalog, --region and --zones do not go with --scenario: the scenario's scenario.yaml says them")
		}
		return s.simulated(ctx, policy)
	}
	now, err := planTime(s.at)
	if err != nil {
		return nil, err
	}
	var objs *plan.Objects
	where := "the manifests"
	if s.kubeconfig != "" {
		objs, where, err = readLive(ctx, s.kubeconfig)
	} else {
		objs, err = plan.Load(paths)
	}
	if err != nil {
		return nil, err
	}
	cat, err := loadCatalog(s.catalog)
	if err != nil {
		return nil, err
	}
	region := s.region
	if region == "" {
		region = objs.Region()
	}
	its, assumptions, err := cat.InstanceTypes(catalog.Options{Region: region, Zones: s.zones})
	if err != nil {
		return nil, fmt.Errorf("--region/--zones: %w", err)
	}
	notes := make([]string, 0, len(assumptions))
	for _, a := range assumptions {
		notes = append(notes, "catalog: "+a)
	}
	notes = append(notes, objs.BufferNotes()...)
	notes = append(notes, objs.ReservationNotes()...)
	return &clusterInput{cluster: objs.State(its), now: now, notes: notes, ignored: objs.IgnoredUnder(policy), where: where}, nil
}

// readLive lists the cluster's objects through the kubeconfig.
func readLive(ctx context.Context, kubeconfig string) (*plan.Objects, string, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("--kubeconfig: %w", err)
	}
	cfg.Timeout = liveTimeout
	scheme, err := plan.NewScheme()
	if err != nil {
		return nil, "", err
	}
	where := "the cluster at " + cfg.Host
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("connecting to the API server at %s (from --kubeconfig %s): %w", cfg.Host, kubeconfig, err)
	}
	// A Reader: plan and explain cannot write to the cluster.
	objs, err := plan.Read(ctx, client.Reader(c))
	switch {
	case errors.Is(err, plan.ErrNoCRD):
		return nil, "", fmt.Errorf("%s: %w", where, err)
	case err != nil:
		return nil, "", fmt.Errorf("reading the API server at %s (from --kubeconfig %s; is the cluster up, and the kubeconfig's current context the one you mean?): %w", cfg.Host, kubeconfig, err)
	}
	return objs, where, nil
}

// simulated runs the scenario up to --at.
func (s *clusterSource) simulated(ctx context.Context, policy provisioning.Policy) (*clusterInput, error) {
	arg := s.scenario
	if _, err := os.Stat(arg); arg == "default" && err != nil {
		arg = "" // the bundled scenario, as simulate with no directory
	}
	tracePath := ""
	if isTraceFile(arg) { // a trace: replayed under its recorded NodePools
		tracePath, arg = arg, ""
	}
	fsys, dir, in, err := loadInput(tracePath, arg)
	if err != nil {
		return nil, err
	}
	name := in.Name
	start, end := in.Scenario.Spec.Start.UTC(), in.Scenario.Spec.Start.UTC().Add(in.Scenario.Spec.Duration.Duration)
	at := end
	switch {
	case s.at == "":
	case strings.HasPrefix(s.at, "+"):
		d, err := time.ParseDuration(s.at[1:])
		if err != nil {
			return nil, fmt.Errorf("--at %q: %v (write +DURATION from the run's start, e.g. +10h30m, or an RFC 3339 time)", s.at, err)
		}
		at = start.Add(d)
	default:
		if at, err = planTime(s.at); err != nil {
			return nil, err
		}
	}
	m, err := sim.RunUntil(ctx, in, fsys, dir, at, sim.Options{Policy: policy})
	if err != nil {
		return nil, fmt.Errorf("--at: %w", err)
	}
	ignored := in.Ignored
	if !policy.ModelDRA {
		ignored = append(append([]manifest.Ignored(nil), in.Ignored...), in.DRADocs...)
	}
	return &clusterInput{cluster: m.Cluster, now: m.At, gaveUp: m.GaveUp, ignored: ignored,
		where: "the simulation of scenario " + name}, nil
}

// scenarioFS finds a scenario directory, or the bundled one for "".
func scenarioFS(arg string) (fs.FS, string, string, error) {
	if arg == "" {
		return examples.Scenarios, "scenarios/default", "default (bundled)", nil
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return nil, "", "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, "", "", fmt.Errorf("scenario: %w", err)
	}
	if !st.IsDir() {
		return nil, "", "", fmt.Errorf("scenario %s is not a directory: give the directory holding the manifests and scenario.yaml", arg)
	}
	return os.DirFS(abs), ".", arg, nil
}
