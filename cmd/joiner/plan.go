package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/plan"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

func newPlanCommand() *cobra.Command {
	var output, catalogFile, region, at, decisions, minValuesPolicy string
	var zones []string
	cmd := &cobra.Command{
		Use:   "plan PATH...",
		Short: "What Joiner would do next to a cluster, as a dry run over its manifests",
		Long: `plan runs one provisioning pass and one disruption pass over the cluster the
files and directories describe — NodePools, EC2NodeClasses, NodeClaims, Nodes,
Pods, DaemonSets and PodDisruptionBudgets, as written or as
"kubectl get nodepools,nodeclaims,nodes,pods,daemonsets,pdb -A -o yaml" prints
them — with the instance types of the EC2 catalog (embedded, or --catalog),
and prints what it would do: the NodeClaims it would create (pool, instance
types cheapest first, zone, capacity type, price, pods), pending pods that
fit a node already there or on its way, pods no NodePool can take with the
reason per NodePool, and the disruption commands of the next pass with the
budget that allows them and the nodes held back and why. It changes nothing.

Pods with no PodScheduled condition (never seen by a scheduler) count as
pending, like those kube-scheduler marked unschedulable; pods nominated to a
node are left to kube-scheduler's preemption. Spot prices in the embedded
catalog are synthetic.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			now, err := planTime(at)
			if err != nil {
				return err
			}
			switch output {
			case "table", "json", "yaml":
			default:
				return fmt.Errorf("-o %q: use table, json or yaml", output)
			}
			c, err := parseChoices(decisions, minValuesPolicy)
			if err != nil {
				return err
			}
			return runPlan(cmd.OutOrStdout(), args, planOptions{output: output, catalog: catalogFile, region: region, zones: zones, now: now, choices: c})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, json or yaml")
	cmd.Flags().StringVar(&catalogFile, "catalog", "", "an instance-type catalog file (the embedded EC2 catalog's format) instead of the embedded one")
	cmd.Flags().StringVar(&region, "region", "", "the cluster's region (default: the nodes' topology.kubernetes.io/region, else us-east-1)")
	cmd.Flags().StringSliceVar(&zones, "zones", nil, "the cluster's zones (default: the catalog's for the region)")
	cmd.Flags().StringVar(&at, "at", "", "plan as of this RFC 3339 time (budget windows, consolidateAfter, expiry); default now")
	cmd.Flags().StringVar(&decisions, "decisions", string(provisioning.DecisionsJoiner), decisionsHelp)
	cmd.Flags().StringVar(&minValuesPolicy, "min-values-policy", string(provisioning.MinValuesStrict), minValuesHelp)
	return cmd
}

type planOptions struct {
	output, catalog, region string
	zones                   []string
	now                     time.Time
	choices                 choices
}

func runPlan(w io.Writer, paths []string, opts planOptions) error {
	objs, err := plan.Load(paths)
	if err != nil {
		return err
	}
	cat, err := loadCatalog(opts.catalog)
	if err != nil {
		return err
	}
	if opts.region == "" {
		opts.region = objs.Region()
	}
	its, assumptions, err := cat.InstanceTypes(catalog.Options{Region: opts.region, Zones: opts.zones})
	if err != nil {
		return fmt.Errorf("--region/--zones: %w", err)
	}
	p := plan.Run(context.Background(), objs.Cluster(its), opts.now, plan.Options{Decisions: opts.choices.decisions, MinValuesPolicy: opts.choices.minValues})
	switch opts.output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	case "yaml":
		b, err := yaml.Marshal(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	writePlan(w, p, assumptions, objs.Skipped)
	return nil
}

func loadCatalog(file string) (*catalog.Catalog, error) {
	if file == "" {
		return catalog.Default()
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--catalog: %w", err)
	}
	return catalog.Parse(b, file)
}

// writePlan prints the plan for people: one aligned section each.
func writePlan(w io.Writer, p *plan.Plan, assumptions []string, skipped map[string]int) {
	fmt.Fprintf(w, "Plan at %s (a dry run: nothing is changed)\n", p.At.Format(time.RFC3339))
	if p.Decisions != "" {
		fmt.Fprintf(w, "note: decisions %s: upstream Karpenter's choices, to predict what it will do\n", p.Decisions)
	}
	for _, a := range assumptions {
		fmt.Fprintf(w, "note: catalog: %s\n", a)
	}
	if len(skipped) > 0 {
		var kinds []string
		for k, n := range skipped {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "note: not read (a plan has no use for them): %s\n", strings.Join(kinds, ", "))
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nNodeClaims to create: %d\n", len(p.NodeClaims))
	if len(p.NodeClaims) > 0 {
		fmt.Fprintln(tw, "  NODEPOOL\tINSTANCE TYPES (cheapest first)\tZONE\tCAPACITY\tUSD/H\tPODS")
		for _, nc := range p.NodeClaims {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%.4f\t%s\n", nc.NodePool, list(nc.InstanceTypes, 4), orAny(nc.Zones), orAny(nc.CapacityTypes), nc.PriceUSDPerHour, list(nc.Pods, 3))
		}
	}
	if len(p.Bindings) > 0 {
		fmt.Fprintf(tw, "\nPending pods that fit a node already there or on its way: %d\n", podCount(p.Bindings))
		for _, b := range p.Bindings {
			fmt.Fprintf(tw, "  %s\t%s\n", b.Node, list(b.Pods, 5))
		}
	}
	for _, s := range p.Static {
		switch {
		case s.Launch > 0 && s.NodeClaim != nil:
			fmt.Fprintf(tw, "\nStatic NodePool %s (replicas %d): launch %d\t%s\t%.4f USD/h each\n", s.NodePool, s.Replicas, s.Launch, list(s.NodeClaim.InstanceTypes, 4), s.NodeClaim.PriceUSDPerHour)
		case s.Launch > 0:
			fmt.Fprintf(tw, "\nStatic NodePool %s (replicas %d): %d short, and no instance type it allows can be launched\n", s.NodePool, s.Replicas, s.Launch)
		default:
			fmt.Fprintf(tw, "\nStatic NodePool %s (replicas %d): remove %s\n", s.NodePool, s.Replicas, strings.Join(s.Remove, ", "))
		}
	}
	fmt.Fprintf(tw, "\nPods that stay pending: %d\n", len(p.Pending))
	for _, pe := range p.Pending {
		fmt.Fprintf(tw, "  %s\t%s\n", pe.Pod, pe.Reason)
	}
	_ = tw.Flush()
	d := p.Disruption
	fmt.Fprintf(w, "\nDisruption, next pass: %d command(s)\n", len(d.Commands))
	for _, c := range d.Commands {
		fmt.Fprintf(w, "  %s (%s): %s, saves %.4f USD/h\n", c.Method, c.Reason, strings.Join(c.Nodes, ", "), c.SavingsUSDPerHour)
		for _, r := range c.Replacements {
			fmt.Fprintf(w, "    replacement: %s %s at %.4f USD/h\n", r.NodePool, list(r.InstanceTypes, 4), r.PriceUSDPerHour)
		}
		for _, b := range c.Budget {
			fmt.Fprintf(w, "    allowed by: %s\n", b)
		}
	}
	if len(d.Expired) > 0 {
		fmt.Fprintf(w, "  expired, drained regardless of budgets: %d: %s\n", len(d.Expired), list(d.Expired, 5))
	}
	if d.PendingNote != "" {
		fmt.Fprintf(w, "  note: %s\n", d.PendingNote)
	}
	var budgets []string
	for _, b := range d.Budgets {
		n := fmt.Sprint(b.Allowed)
		if b.Allowed < 0 {
			n = "any"
		}
		if b.Until != nil {
			n += " until " + b.Until.Format("Mon 15:04 MST")
		}
		budgets = append(budgets, fmt.Sprintf("%s/%s %s", b.NodePool, b.Reason, n))
	}
	if len(budgets) > 0 {
		fmt.Fprintf(w, "  budgets now: %s\n", strings.Join(budgets, ", "))
	}
	if len(d.Blocked) > 0 {
		tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "\nNodes held back: %d\n", len(d.Blocked))
		for _, b := range d.Blocked {
			fmt.Fprintf(tw, "  %s\t%s\n", b.Node, b.Reason)
		}
		_ = tw.Flush()
	}
}

func podCount(bs []plan.Binding) int {
	n := 0
	for _, b := range bs {
		n += len(b.Pods)
	}
	return n
}

// list shows at most n items, then how many more.
func list(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ",")
	}
	return strings.Join(items[:n], ",") + fmt.Sprintf(" (+%d)", len(items)-n)
}

func orAny(vs []string) string {
	if len(vs) == 0 {
		return "any"
	}
	return strings.Join(vs, ",")
}
