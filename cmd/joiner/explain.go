package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/joiner-autoscaler/joiner/pkg/plan"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// sources is the help every explain command shares on where it reads.
const sources = `
The cluster comes from one of: manifest files and directories (PATH...),
as written or as "kubectl get nodepools,nodeclaims,nodes,pods,daemonsets,pdb
-A -o yaml" prints them; a live cluster (--kubeconfig FILE), only read; or a
simulation (--scenario DIR, "default" for the bundled one) run up to --at,
RFC 3339 or +DURATION from its start (default its end).`

func newExplainCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Why Joiner would or would not act on a pod, a NodePool or a node: from manifests, a live cluster or a simulation",
	}
	cmd.AddCommand(newExplainNodePoolCommand(), newExplainNodeCommand(), newExplainPodCommand())
	return cmd
}

// explainFlags are every explain command's flags.
type explainFlags struct {
	src    clusterSource
	output string
	pf     policyFlags
	// policy is pf's, once read has checked it.
	policy provisioning.Policy
}

func (f *explainFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "text or json")
	f.src.register(cmd)
	f.pf.register(cmd)
}

// read checks -o and the policy flags and reads the cluster.
func (f *explainFlags) read(cmd *cobra.Command, paths []string) (*clusterInput, error) {
	if f.output != "text" && f.output != "json" {
		return nil, fmt.Errorf("-o %q: use text or json", f.output)
	}
	var err error
	if f.policy, err = f.pf.policy(); err != nil {
		return nil, err
	}
	return f.src.read(cmd.Context(), paths, f.policy)
}

func newExplainNodePoolCommand() *cobra.Command {
	var f explainFlags
	cmd := &cobra.Command{
		Use:   "nodepool NAME [PATH...]",
		Short: "A NodePool's allowed disruptions by reason now, its budget windows, and its usage against limits",
		Long: `explain nodepool says for the NodePool: how many of its nodes may be disrupted
now for each reason and which budget decides it (and until when), when each
scheduled budget's window next opens or closes, and what its nodes hold
against spec.limits.
` + sources,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := f.read(cmd, args[1:])
			if err != nil {
				return err
			}
			ex, err := plan.ExplainNodePool(in.cluster, args[0], in.now, f.policy)
			if err != nil {
				return err
			}
			ex.Ignored = in.ignored
			if f.output == "json" {
				return writeJSON(cmd.OutOrStdout(), ex)
			}
			writeNodePoolExplanation(cmd.OutOrStdout(), ex, paletteFor(cmd.OutOrStdout()))
			writeIgnored(cmd.OutOrStdout(), in.ignored)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newExplainNodeCommand() *cobra.Command {
	var f explainFlags
	cmd := &cobra.Command{
		Use:   "node NAME [PATH...]",
		Short: "Why a node is or is not being disrupted: each method's answer, with its evidence",
		Long: `explain node says for the node what each disruption method makes of it, in the
order a pass tries them — expiration, emptiness, drift, consolidation (as
single-node) — with the evidence: the do-not-disrupt pod or PDB that blocks
it, the budget that allows none now, consolidateAfter not yet passed, no
cheaper replacement and what the cheapest costs, or what would be done.
` + sources,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := f.read(cmd, args[1:])
			if err != nil {
				return err
			}
			ex, err := plan.ExplainNode(cmd.Context(), in.cluster, args[0], in.now, f.policy)
			if err != nil {
				return err
			}
			ex.Ignored = in.ignored
			if f.output == "json" {
				return writeJSON(cmd.OutOrStdout(), ex)
			}
			writeNodeExplanation(cmd.OutOrStdout(), ex, paletteFor(cmd.OutOrStdout()))
			writeIgnored(cmd.OutOrStdout(), in.ignored)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newExplainPodCommand() *cobra.Command {
	var f explainFlags
	cmd := &cobra.Command{
		Use:   "pod [NAMESPACE/]NAME [PATH...]",
		Short: "Where a pending pod would go, and what each NodePool makes of it",
		Long: `explain pod says where a provisioning pass puts the pod — a node already there
or on its way, a new NodeClaim, or nowhere — and, for each NodePool in the
order provisioning tries them (weight, then name), whether a new node of it
could run the pod: the instance types it would get, cheapest first, and the
price; or the first thing that stops it, with its evidence (the taint the pod
does not tolerate, the requirement in conflict with both sides' values, the
limit with its usage, the largest instance type with the pod's requests, the
topology spread or pod (anti-)affinity it cannot meet).
` + sources,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := f.read(cmd, args[1:])
			if err != nil {
				return err
			}
			ns, name, found := strings.Cut(args[0], "/")
			if !found {
				ns, name = "", args[0]
			}
			ex, err := plan.ExplainPod(cmd.Context(), in.cluster, ns, name, f.policy)
			if err != nil {
				return fmt.Errorf("%s: %w", in.where, err)
			}
			ex.Simulator = in.gaveUp[ex.Pod]
			ex.Ignored = in.ignored
			if f.output == "json" {
				return writeJSON(cmd.OutOrStdout(), ex)
			}
			if err := writePodExplanation(cmd.OutOrStdout(), ex, paletteFor(cmd.OutOrStdout())); err != nil {
				return err
			}
			writeIgnored(cmd.OutOrStdout(), in.ignored)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// planTime reads --at (default now).
func planTime(at string) (time.Time, error) {
	if at == "" {
		return time.Now(), nil
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return time.Time{}, fmt.Errorf("--at %q: %v (write an RFC 3339 time, e.g. 2026-12-01T09:00:00Z)", at, err)
	}
	return t, nil
}

func writePodExplanation(w io.Writer, e *plan.PodExplanation, pal palette) error {
	fmt.Fprintf(w, "Pod %s (requests %s)\n", pal.head(e.Pod), e.SortedRequests())
	fmt.Fprintf(w, "Goes to        %s\n", e.Result)
	if e.Simulator != "" {
		fmt.Fprintf(w, "Simulator      %s\n", e.Simulator)
	}
	if len(e.Pools) == 0 {
		return nil
	}
	fmt.Fprintln(w, "NodePools, in the order provisioning tries them:")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, v := range e.Pools {
		if !v.CanRun {
			fmt.Fprintf(tw, "  %s\tweight %d\t%s\t%s\n", v.NodePool, v.Weight, pal.bad("no"), v.Why)
			continue
		}
		nc := v.NodeClaim
		types := nc.InstanceTypes
		more := ""
		if len(types) > 5 {
			types, more = types[:5], fmt.Sprintf(" and %d more", len(nc.InstanceTypes)-5)
		}
		ovl := ""
		if len(nc.NodeOverlays) > 0 {
			ovl = " (NodeOverlays " + strings.Join(nc.NodeOverlays, ", ") + ")"
		}
		fmt.Fprintf(tw, "  %s\tweight %d\t%s\ton %s%s, from $%.4f/h%s\n", v.NodePool, v.Weight, pal.good("yes"), strings.Join(types, ", "), more, nc.PriceUSDPerHour, ovl)
	}
	return tw.Flush()
}

func writeNodeExplanation(w io.Writer, ex *plan.NodeExplanation, pal palette) {
	fmt.Fprintf(w, "Node %s at %s\n", pal.head(ex.Node), ex.At.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, m := range ex.Methods {
		verdict := pal.bad("no")
		if m.Acts {
			verdict = pal.good("ACTS")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", m.Method, verdict, m.Why)
	}
	_ = tw.Flush()
}

func writeNodePoolExplanation(w io.Writer, ex *plan.NodePoolExplanation, pal palette) {
	const when = "Mon 15:04 MST"
	fmt.Fprintf(w, "NodePool %s at %s\n", pal.head(ex.NodePool), ex.At.Format(time.RFC3339))
	disrupting := ""
	if len(ex.DisruptingNodes) > 0 {
		disrupting = ": " + list(ex.DisruptingNodes, 5)
	}
	fmt.Fprintf(w, "Nodes          %d (%d initialized, %d of them disrupting or not Ready%s)\n", ex.Nodes, ex.Initialized, ex.Disrupting, disrupting)
	for i, o := range ex.NodeOverlays {
		label := "               "
		if i == 0 {
			label = "NodeOverlays   "
		}
		if o.Applied {
			fmt.Fprintf(w, "%s%s: the price or capacity of %d of its instance types\n", label, o.Name, o.InstanceTypes)
		} else {
			fmt.Fprintf(w, "%s%s: refused (%s): %s\n", label, o.Name, o.Reason, o.Message)
		}
	}
	for i, b := range ex.Allowed {
		label := "               "
		if i == 0 {
			label = "Allowed now    "
		}
		switch {
		case b.Allowed < 0:
			fmt.Fprintf(w, "%s%s: any (no budget applies)\n", label, b.Reason)
		case b.Until != nil:
			fmt.Fprintf(w, "%s%s: %d, by %s until %s\n", label, b.Reason, b.Allowed, b.Budget, b.Until.Format(when))
		default:
			fmt.Fprintf(w, "%s%s: %d, by %s\n", label, b.Reason, b.Allowed, b.Budget)
		}
	}
	for i, win := range ex.Windows {
		label := "               "
		if i == 0 {
			label = "Windows        "
		}
		state, verb := "closed", "opens"
		if win.Open {
			state, verb = "open", "closes"
		}
		fmt.Fprintf(w, "%s%s: %s, %s %s\n", label, win.Budget, state, verb, win.Next.Format(when))
	}
	if len(ex.Usage) == 0 {
		fmt.Fprintln(w, "Limits         none: the pool may grow without bound")
		return
	}
	var us []string
	for _, u := range ex.Usage {
		s := fmt.Sprintf("%s %s of %s", u.Resource, u.Used, u.Limit)
		if u.AtLimit {
			s += pal.bad(" (at the limit: no new node launches)")
		}
		us = append(us, s)
	}
	fmt.Fprintf(w, "Limits         %s\n", strings.Join(us, ", "))
}
