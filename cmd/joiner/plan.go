package main

import (
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
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/plan"
)

func newPlanCommand() *cobra.Command {
	var output string
	var pf policyFlags
	var src clusterSource
	cmd := &cobra.Command{
		Use:   "plan [PATH...]",
		Short: "What Joiner would do next to a cluster, as a dry run over its manifests, the live cluster or a simulation",
		Long: `plan runs one provisioning pass and one disruption pass over the cluster —
NodePools, EC2NodeClasses, NodeClaims, Nodes, Pods, DaemonSets and
PodDisruptionBudgets — with the instance types of the EC2 catalog (embedded,
or --catalog), and prints what it would do: the NodeClaims it would create
(pool, instance types cheapest first, zone, capacity type, price, pods),
pending pods that fit a node already there or on its way, pods no NodePool
can take with the reason per NodePool, and the disruption commands of the
next pass with the budget that allows them and the nodes held back and why.
It changes nothing.
` + sources + `

Pods with no PodScheduled condition (never seen by a scheduler) count as
pending, like those kube-scheduler marked unschedulable; pods nominated to a
node are left to kube-scheduler's preemption. Spot prices in the embedded
catalog are synthetic.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "table", "json", "yaml":
			default:
				return fmt.Errorf("-o %q: use table, json or yaml", output)
			}
			policy, err := pf.policy()
			if err != nil {
				return err
			}
			in, err := src.read(cmd.Context(), args, policy)
			if err != nil {
				return err
			}
			p := plan.Run(cmd.Context(), in.cluster, in.now, plan.Options{Policy: policy})
			p.Ignored = in.ignored
			return writePlanAs(cmd.OutOrStdout(), p, in, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, json or yaml")
	src.register(cmd)
	src.registerPlacement(cmd)
	pf.register(cmd)
	return cmd
}

func writePlanAs(w io.Writer, p *plan.Plan, in *clusterInput, output string) error {
	switch output {
	case "json":
		return writeJSON(w, p)
	case "yaml":
		b, err := yaml.Marshal(p)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	writePlan(w, p, in, paletteFor(w))
	return nil
}

// writeIgnored says, one note per reason, which objects of the input were
// left out and what that means.
func writeIgnored(w io.Writer, ig []manifest.Ignored) {
	for _, line := range manifest.IgnoredLines(ig, 10) {
		fmt.Fprintf(w, "note: left out: %s\n", line)
	}
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
func writePlan(w io.Writer, p *plan.Plan, in *clusterInput, pal palette) {
	writePlanNotes(w, p, in)
	writeProvisioning(w, p, pal)
	writeDisruption(w, p.Disruption, pal)
}

// writePlanNotes prints what the plan is of and what it assumed.
func writePlanNotes(w io.Writer, p *plan.Plan, in *clusterInput) {
	fmt.Fprintf(w, "Plan of %s at %s (a dry run: nothing is changed)\n", in.where, p.At.Format(time.RFC3339))
	if p.Decisions != "" {
		fmt.Fprintf(w, "note: decisions %s: upstream Karpenter's choices, to predict what it will do\n", p.Decisions)
	}
	for _, a := range in.notes {
		fmt.Fprintf(w, "note: %s\n", a)
	}
	writeIgnored(w, in.ignored)
	if len(in.gaveUp) > 0 {
		pods := make([]string, 0, len(in.gaveUp))
		for p := range in.gaveUp {
			pods = append(pods, p)
		}
		sort.Strings(pods)
		fmt.Fprintf(w, "note: the simulator launches no more nodes for %d pod(s) that never bound to those launched for them: %s (joiner explain pod says why)\n", len(pods), list(pods, 5))
	}
	for _, b := range p.Buffers {
		fmt.Fprintf(w, "note: CapacityBuffer %s: %d chunk(s) on existing nodes, %d on NodeClaims to create, %d held by none\n", b.Name, b.OnExisting, b.OnNew, b.Unplaced)
	}
	for _, o := range p.NodeOverlays {
		if o.Applied {
			fmt.Fprintf(w, "note: NodeOverlay %s applies to %d (NodePool, instance type) pairs\n", o.Name, o.InstanceTypes)
		} else {
			fmt.Fprintf(w, "note: NodeOverlay %s is refused (%s): %s\n", o.Name, o.Reason, o.Message)
		}
	}
}

// writeProvisioning prints the claims to create, the pods that fit where
// they are, the static NodePools and the pods that stay pending.
func writeProvisioning(w io.Writer, p *plan.Plan, pal palette) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\n%s\n", pal.head(fmt.Sprintf("NodeClaims to create: %d", len(p.NodeClaims))))
	if len(p.NodeClaims) > 0 {
		fmt.Fprintln(tw, "  NODEPOOL\tINSTANCE TYPES (cheapest first)\tZONE\tCAPACITY\tUSD/H\tPODS")
		for _, nc := range p.NodeClaims {
			pods := list(nc.Pods, 3)
			if len(nc.NodeOverlays) > 0 {
				pods += "  (overlays: " + strings.Join(nc.NodeOverlays, ", ") + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%.4f\t%s\n", nc.NodePool, list(nc.InstanceTypes, 4), orAny(nc.Zones), orAny(nc.CapacityTypes), nc.PriceUSDPerHour, pods)
		}
	}
	if len(p.Bindings) > 0 {
		fmt.Fprintf(tw, "\n%s\n", pal.head(fmt.Sprintf("Pending pods that fit a node already there or on its way: %d", podCount(p.Bindings))))
		for _, b := range p.Bindings {
			fmt.Fprintf(tw, "  %s\t%s\n", b.Node, list(b.Pods, 5))
		}
	}
	for _, s := range p.Static {
		var what string
		switch {
		case s.Launch > 0 && s.NodeClaim != nil:
			what = fmt.Sprintf("launch %d\t%s\t%.4f USD/h each", s.Launch, list(s.NodeClaim.InstanceTypes, 4), s.NodeClaim.PriceUSDPerHour)
		case s.Launch > 0:
			what = fmt.Sprintf("%d short, and no instance type it allows can be launched", s.Launch)
		case len(s.Remove) > 0:
			what = "remove " + strings.Join(s.Remove, ", ")
		default:
			what = "remove none now"
		}
		fmt.Fprintf(tw, "\n%s: %s\n", pal.head(fmt.Sprintf("Static NodePool %s (replicas %d)", s.NodePool, s.Replicas)), what)
		if len(s.Held) > 0 {
			fmt.Fprintf(tw, "  held: %s (%s)\n", list(s.Held, 5), s.Why)
		}
	}
	fmt.Fprintf(tw, "\n%s\n", pal.head(fmt.Sprintf("Pods that stay pending: %d", len(p.Pending))))
	for _, pe := range p.Pending {
		fmt.Fprintf(tw, "  %s\t%s\n", pe.Pod, pe.Reason)
	}
	_ = tw.Flush()
}

// writeDisruption prints the next disruption pass: its commands, the
// budgets and the nodes held back.
func writeDisruption(w io.Writer, d plan.Disruption, pal palette) {
	fmt.Fprintf(w, "\n%s\n", pal.head(fmt.Sprintf("Disruption, next pass: %d command(s)", len(d.Commands))))
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
	if len(d.Leaving) > 0 {
		fmt.Fprintf(w, "  rounds to come, marked %s: %d: %s\n", disruption.ConsolidatingTaint.Key, len(d.Leaving), list(d.Leaving, 8))
		fmt.Fprintf(w, "    the next round's, marked %s too: %s\n", disruption.ConsolidatingNextTaint.Key, list(d.LeavingNext, 8))
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
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "\n%s\n", pal.head(fmt.Sprintf("Nodes held back: %d", len(d.Blocked))))
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
