package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/plan"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

func newExplainCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Why Joiner would or would not act on a pod, a NodePool or a node, from a cluster's manifests",
	}
	var output, at string
	nodepool := &cobra.Command{
		Use:   "nodepool NAME PATH...",
		Short: "A NodePool's allowed disruptions by reason now, its budget windows, and its usage against limits",
		Long: `explain nodepool reads a cluster's manifests or "kubectl get -o yaml" output, as
plan does, and says for the NodePool: how many of its nodes may be disrupted
now for each reason and which budget decides it (and until when), when each
scheduled budget's window next opens or closes, and what its nodes hold
against spec.limits.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			objs, now, err := explainInput(args[1:], at, output)
			if err != nil {
				return err
			}
			ex, err := plan.ExplainNodePool(objs.Cluster(nil), args[0], now)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), ex)
			}
			writeNodePoolExplanation(cmd.OutOrStdout(), ex)
			return nil
		},
	}
	nodepool.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	nodepool.Flags().StringVar(&at, "at", "", "as of this RFC 3339 time; default now")
	var nodeOutput, nodeAt string
	node := &cobra.Command{
		Use:   "node NAME PATH...",
		Short: "Why a node is or is not being disrupted: each method's answer, with its evidence",
		Long: `explain node reads a cluster's manifests or "kubectl get -o yaml" output, as plan
does, and says for the node what each disruption method makes of it, in the
order a pass tries them — expiration, emptiness, drift, consolidation (as
single-node) — with the evidence: the do-not-disrupt pod or PDB that blocks
it, the budget that allows none now, consolidateAfter not yet passed, no
cheaper replacement and what the cheapest costs, or what would be done.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, now, err := explainCluster(args[1:], nodeAt, nodeOutput, "")
			if err != nil {
				return err
			}
			ex, err := plan.ExplainNode(context.Background(), c, args[0], now)
			if err != nil {
				return err
			}
			if nodeOutput == "json" {
				return writeJSON(cmd.OutOrStdout(), ex)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "Node %s at %s\n", ex.Node, ex.At.Format(time.RFC3339))
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			for _, m := range ex.Methods {
				verdict := "no"
				if m.Acts {
					verdict = "ACTS"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", m.Method, verdict, m.Why)
			}
			return tw.Flush()
		},
	}
	node.Flags().StringVarP(&nodeOutput, "output", "o", "text", "text or json")
	node.Flags().StringVar(&nodeAt, "at", "", "as of this RFC 3339 time; default now")
	cmd.AddCommand(nodepool, node, newExplainPodCommand())
	return cmd
}

func newExplainPodCommand() *cobra.Command {
	var output, catalogFile string
	cmd := &cobra.Command{
		Use:   "pod [NAMESPACE/]NAME PATH...",
		Short: "Where a pending pod would go, and what each NodePool makes of it",
		Long: `explain pod reads a cluster's manifests or "kubectl get -o yaml" output, as plan
does, and says where a provisioning pass puts the pod — a node already there
or on its way, a new NodeClaim, or nowhere — and, for each NodePool in the
order provisioning tries them (weight, then name), whether a new node of it
could run the pod: the instance types it would get, cheapest first, and the
price; or the first thing that stops it, with its evidence (the taint the pod
does not tolerate, the requirement in conflict with both sides' values, the
limit with its usage, the largest instance type with the pod's requests).`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := explainCluster(args[1:], "", output, catalogFile)
			if err != nil {
				return err
			}
			ns, name, found := strings.Cut(args[0], "/")
			if !found {
				ns, name = "", args[0]
			}
			ex, err := plan.ExplainPod(context.Background(), c, ns, name)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), ex)
			}
			_, err = io.WriteString(cmd.OutOrStdout(), ex.Text())
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().StringVar(&catalogFile, "catalog", "", "an instance-type catalog file (the embedded EC2 catalog's format) instead of the embedded one")
	return cmd
}

// explainInput checks an explain command's flags and loads its paths.
func explainInput(paths []string, at, output string) (*plan.Objects, time.Time, error) {
	now, err := planTime(at)
	if err != nil {
		return nil, now, err
	}
	if output != "text" && output != "json" {
		return nil, now, fmt.Errorf("-o %q: use text or json", output)
	}
	objs, err := plan.Load(paths)
	return objs, now, err
}

// explainCluster is explainInput's cluster with the catalog's instance
// types for its region.
func explainCluster(paths []string, at, output, catalogFile string) (*state.Cluster, time.Time, error) {
	objs, now, err := explainInput(paths, at, output)
	if err != nil {
		return nil, now, err
	}
	cat, err := loadCatalog(catalogFile)
	if err != nil {
		return nil, now, err
	}
	its, _, err := cat.InstanceTypes(catalog.Options{Region: objs.Region()})
	if err != nil {
		return nil, now, err
	}
	return objs.Cluster(its), now, nil
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

func writeNodePoolExplanation(w io.Writer, ex *plan.NodePoolExplanation) {
	const when = "Mon 15:04 MST"
	fmt.Fprintf(w, "NodePool %s at %s\n", ex.NodePool, ex.At.Format(time.RFC3339))
	fmt.Fprintf(w, "Nodes          %d (%d initialized, %d of them disrupting or not Ready)\n", ex.Nodes, ex.Initialized, ex.Disrupting)
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
			s += " (at the limit: no new node launches)"
		}
		us = append(us, s)
	}
	fmt.Fprintf(w, "Limits         %s\n", strings.Join(us, ", "))
}
