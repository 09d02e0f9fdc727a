package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

// WriteSummary prints the report as a person reads it in ten seconds.
func WriteSummary(w io.Writer, r *Report) {
	writeCostAndNodes(w, r)
	writePods(w, r)
	writeDisruptions(w, r)
	writeNotes(w, r)
	writeNodeHours(w, r)
}

// writeCostAndNodes prints the run, its cost and its nodes.
func writeCostAndNodes(w io.Writer, r *Report) {
	fmt.Fprintf(w, "Scenario %s: %s → %s (seed %d)\n\n", r.Scenario, r.Start.Format("Mon 2006-01-02 15:04"), r.End.Format("Mon 2006-01-02 15:04 MST"), r.Seed)
	fmt.Fprintf(w, "Cost           $%.2f", r.Cost.Total)
	var pools []string
	for _, p := range slices.Sorted(maps.Keys(r.Cost.ByPool)) {
		pools = append(pools, fmt.Sprintf("%s $%.2f", p, r.Cost.ByPool[p]))
	}
	fmt.Fprintf(w, "  (%s; spot prices are synthetic)\n", strings.Join(pools, ", "))
	fmt.Fprintf(w, "Nodes          %d launched", r.Nodes.Launched)
	var peaks []string
	for _, p := range slices.Sorted(maps.Keys(r.Nodes.PeakByPool)) {
		peaks = append(peaks, fmt.Sprintf("%s %d", p, r.Nodes.PeakByPool[p]))
	}
	fmt.Fprintf(w, "; peak %s\n", strings.Join(peaks, ", "))
	if len(r.ByZone) > 0 {
		zs := joined(r.ByZone, func(z ZoneStats) string { return fmt.Sprintf("%s %d nodes %d pods", z.Zone, z.Launched, z.PodsRan) })
		fmt.Fprintf(w, "Zones          %s (launched; pods bound over the run)\n", zs)
	}
}

// writePods prints the pods' startup, those that never ran and the launch
// loops.
func writePods(w io.Writer, r *Report) {
	if r.Pods.Ran == 0 || r.Pods.StartupP50 == nil {
		fmt.Fprintf(w, "Pod startup    no pod ran (%d created)\n", r.Pods.Created)
	} else {
		fmt.Fprintf(w, "Pod startup    p50 %s  p90 %s  p99 %s  (pending → running; %d pods ran)\n", secs(r.Pods.StartupP50), secs(r.Pods.StartupP90), secs(r.Pods.StartupP99), r.Pods.Ran)
	}
	if slow := slowestWorkloads(r.Pods.ByWorkload, 3); len(slow) > 1 {
		fmt.Fprintf(w, "               slowest p90: %s\n", strings.Join(slow, ", "))
	}
	if idle := idleWorkloads(r.Pods.ByWorkload); len(idle) > 0 {
		const shown = 5
		more := ""
		if len(idle) > shown {
			more = fmt.Sprintf(" … %d more in --json", len(idle)-shown)
		}
		fmt.Fprintf(w, "               no pod ran: %s%s\n", strings.Join(idle[:min(shown, len(idle))], ", "), more)
	}
	if r.Pods.NeverRan > 0 {
		fmt.Fprintf(w, "Never ran      %d pods\n", r.Pods.NeverRan)
		for _, n := range r.Pods.NeverRanPods {
			names := strings.Join(n.Names, ", ")
			if n.Pods > len(n.Names) {
				names += fmt.Sprintf(" and %d more", n.Pods-len(n.Names))
			}
			fmt.Fprintf(w, "               %d × %s (%s): %s\n", n.Pods, n.Workload, names, n.Reason)
		}
		if len(r.Pods.NeverRanPods) > 0 {
			dir := r.Scenario
			if name, bundled := strings.CutSuffix(dir, " (bundled)"); bundled {
				dir = name
			}
			fmt.Fprintf(w, "               joiner explain pod %s --scenario %s --at %s: each NodePool's verdict on it\n",
				r.Pods.NeverRanPods[0].Names[0], dir, r.End.Format(time.RFC3339))
		}
	} else {
		fmt.Fprintf(w, "Never ran      none\n")
	}
	for i, l := range r.LaunchLoops {
		label := "               "
		if i == 0 {
			label = "Launch loops   "
		}
		fmt.Fprintf(w, "%s%s: %d pods never bound to the %d nodes launched for them, and no more were launched: %s\n", label, l.Workload, l.Pods, l.Nodes, l.Reason)
	}
}

// writeDisruptions prints the disruptions, budgets, interruptions,
// repairs, preemption, cloud errors and autoscalers.
func writeDisruptions(w io.Writer, r *Report) {
	var ds []string
	for _, d := range r.Disruptions {
		ds = append(ds, fmt.Sprintf("%s/%s %d", d.NodePool, d.Reason, d.Count))
	}
	if len(ds) == 0 {
		ds = []string{"none"}
	}
	fmt.Fprintf(w, "Disruptions    %s\n", strings.Join(ds, ", "))
	fmt.Fprintf(w, "Blocked        %d node(s) held back by budgets (%d times), %d of them drifted (%d times); drift at most %d node(s) at once, %d budget violations\n",
		r.BlockedByBudgetNodes, r.BlockedByBudget, r.DriftBudget.HeldBackNodes, r.DriftBudget.HeldBackPassBlocks, r.DriftBudget.MaxConcurrent, r.DriftBudget.Violations)
	fmt.Fprintf(w, "Spot           %d interruptions survived\n", r.SpotInterruptions)
	if rp := r.Repairs; rp != nil {
		fmt.Fprintf(w, "Node repair    %d nodes failed, %d replaced once unhealthy past the toleration; NodePools held back %d times (more than 20 %% of their nodes unhealthy)\n",
			rp.Failed, rp.Replaced, rp.Held)
	}
	if r.Preemptions.Preemptors > 0 {
		fmt.Fprintf(w, "Preemption     %d pods preempted %d of lower priority\n", r.Preemptions.Preemptors, r.Preemptions.Victims)
	}
	if len(r.CloudErrors) > 0 {
		var errs []string
		for _, k := range slices.Sorted(maps.Keys(r.CloudErrors)) {
			errs = append(errs, fmt.Sprintf("%s %d", k, r.CloudErrors[k]))
		}
		fmt.Fprintf(w, "Cloud errors   %s (karpenter_cloudprovider_errors_total)\n", strings.Join(errs, ", "))
	}
	if len(r.Autoscalers) > 0 {
		as := joined(r.Autoscalers, func(a Autoscaler) string { return fmt.Sprintf("%s %d–%d", a.Name, a.Min, a.Max) })
		fmt.Fprintf(w, "Autoscaling    %s replicas\n", as)
	}
}

// writeNotes prints what the NodeOverlays did, the first notes and what
// the simulation left out.
func writeNotes(w io.Writer, r *Report) {
	writeOverlays(w, r.NodeOverlays)
	writeBuffers(w, r.Buffers)
	for i, rz := range r.Resizes {
		label := "               "
		if i == 0 {
			label = "Resizes        "
		}
		reqs := make([]string, 0, len(rz.Requests))
		for k, v := range rz.Requests {
			reqs = append(reqs, k+" "+v)
		}
		sort.Strings(reqs)
		fmt.Fprintf(w, "%s%s %s %s → %s: %d pods, %d at once, %d deferred for room (%d done later), %d infeasible\n", label, rz.At.Format("Mon 15:04"),
			rz.Workload, rz.Container, strings.Join(reqs, ", "), rz.Pods, rz.InPlace, rz.Deferred, rz.DoneLater, rz.Infeasible)
	}
	for i, line := range manifest.IgnoredLines(r.Ignored, 10) {
		label := "               "
		if i == 0 {
			label = "Left out       "
		}
		fmt.Fprintf(w, "%s%s\n", label, line)
	}
	if len(r.Notes) > 0 {
		const shown = 5
		for i, n := range r.Notes[:min(shown, len(r.Notes))] {
			label := "               "
			if i == 0 {
				label = "Notes          "
			}
			fmt.Fprintf(w, "%s%s\n", label, n)
		}
		if len(r.Notes) > shown {
			fmt.Fprintf(w, "               … %d more in --json\n", len(r.Notes)-shown)
		}
	}
}

// writeNodeHours prints the node-hours by instance type.
func writeNodeHours(w io.Writer, r *Report) {
	fmt.Fprintln(w, "\nNode-hours by instance type")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for i, nh := range r.NodeHours {
		if i == 8 {
			fmt.Fprintf(tw, "  … %d more\t\t\t\n", len(r.NodeHours)-8)
			break
		}
		fmt.Fprintf(tw, "  %s\t%s\t%.1f h\t$%.2f\n", nh.InstanceType, nh.CapacityType, nh.Hours, nh.CostUSD)
	}
	_ = tw.Flush()
}

// ComparisonWarnings says where two runs are not like for like: a
// different duration or start makes costs and counts incomparable.
func ComparisonWarnings(a, b *Report) []string {
	var out []string
	if da, db := a.End.Sub(a.Start), b.End.Sub(b.Start); da != db {
		out = append(out, fmt.Sprintf("warning: the runs differ in duration: %s vs %s", v1.ShortDuration(da), v1.ShortDuration(db)))
	}
	if !a.Start.Equal(b.Start) {
		const layout = "Mon 2006-01-02 15:04 MST"
		out = append(out, fmt.Sprintf("warning: the runs differ in start: %s vs %s", a.Start.Format(layout), b.Start.Format(layout)))
	}
	return out
}

// secs is a percentile in whole seconds ("12s"), or "no pod ran" when
// absent; number is the same without the unit.
func secs(p *float64) string {
	if p == nil {
		return number(p)
	}
	return number(p) + "s"
}

func number(p *float64) string {
	if p == nil {
		return "no pod ran"
	}
	return fmt.Sprintf("%.0f", *p)
}

// WriteComparison prints two reports side by side, after a warning for
// each way the runs are not like for like.
func WriteComparison(w io.Writer, a, b *Report) {
	for _, warn := range ComparisonWarnings(a, b) {
		fmt.Fprintln(w, warn)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\t%s\t%s\n", a.Scenario, b.Scenario)
	row := func(name, fa, fb string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", name, fa, fb) }
	row("cost (USD)", fmt.Sprintf("%.2f", a.Cost.Total), fmt.Sprintf("%.2f", b.Cost.Total))
	row("nodes launched", fmt.Sprint(a.Nodes.Launched), fmt.Sprint(b.Nodes.Launched))
	startup := func(r *Report) string {
		if r.Pods.StartupP50 == nil || r.Pods.StartupP99 == nil {
			return "no pod ran"
		}
		return fmt.Sprintf("%.0f / %.0f", *r.Pods.StartupP50, *r.Pods.StartupP99)
	}
	row("startup p50 / p99 (s)", startup(a), startup(b))
	row("pods never ran", fmt.Sprint(a.Pods.NeverRan), fmt.Sprint(b.Pods.NeverRan))
	count := func(r *Report) int {
		n := 0
		for _, d := range r.Disruptions {
			n += d.Count
		}
		return n
	}
	row("disruptions", fmt.Sprint(count(a)), fmt.Sprint(count(b)))
	row("spot interruptions", fmt.Sprint(a.SpotInterruptions), fmt.Sprint(b.SpotInterruptions))
	if a.Repairs != nil || b.Repairs != nil {
		repaired := func(r *Report) string {
			if r.Repairs == nil {
				return "-"
			}
			return fmt.Sprint(r.Repairs.Replaced)
		}
		row("nodes repaired", repaired(a), repaired(b))
	}
	row("preemptions", fmt.Sprint(a.Preemptions.Preemptors), fmt.Sprint(b.Preemptions.Preemptors))
	// The workloads both run: how long their pods waited.
	for _, k := range slices.Sorted(maps.Keys(a.Pods.ByWorkload)) {
		if sb, ok := b.Pods.ByWorkload[k]; ok {
			sa := a.Pods.ByWorkload[k]
			row(k+" p90 (s)", number(sa.P90), number(sb.P90))
		}
	}
	_ = tw.Flush()
}

// slowestWorkloads names the n workloads whose pods waited longest (p90),
// of those with a pod that ran.
func slowestWorkloads(by map[string]Startup, n int) []string {
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(by)) {
		if by[k].P90 != nil {
			keys = append(keys, k)
		}
	}
	sort.SliceStable(keys, func(i, j int) bool { return *by[keys[i]].P90 > *by[keys[j]].P90 })
	var out []string
	for _, k := range keys[:min(n, len(keys))] {
		out = append(out, fmt.Sprintf("%s %s", k, secs(by[k].P90)))
	}
	return out
}

// idleWorkloads names the workloads that created pods of which none ran.
func idleWorkloads(by map[string]Startup) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(by)) {
		if by[k].Ran == 0 {
			out = append(out, k)
		}
	}
	return out
}

// joined is f of each item, comma-separated.
func joined[T any](items []T, f func(T) string) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = f(it)
	}
	return strings.Join(out, ", ")
}

// writeBuffers prints what the CapacityBuffers held, cost and saved.
func writeBuffers(w io.Writer, b *BufferReport) {
	if b == nil {
		return
	}
	for i, st := range b.Buffers {
		label := "               "
		if i == 0 {
			label = "Buffers        "
		}
		what := fmt.Sprintf("%d chunk(s) at the end, at most %d", st.Chunks, st.MaxChunks)
		if st.Ready != "Resolved" {
			what = "held nothing: " + st.Ready + " (" + st.ReadyMessage + ")"
		} else if st.Provisioning != "" {
			what += "; last pass: " + st.Provisioning
		}
		fmt.Fprintf(w, "%sCapacityBuffer %s: %s\n", label, st.Name, what)
	}
	if b.WithoutCostUSD == 0 {
		return // no run without them to compare with
	}
	extra := b.CostUSD - b.WithoutCostUSD
	pct := 0.0
	if b.WithoutCostUSD > 0 {
		pct = extra / b.WithoutCostUSD * 100
	}
	fmt.Fprintf(w, "               without them: $%.2f, so they cost $%.2f (%+.1f%%); pod startup p50 %s → %s, p99 %s → %s with them\n",
		b.WithoutCostUSD, extra, pct, secs(b.WithoutStartupP50), secs(b.StartupP50), secs(b.WithoutStartupP99), secs(b.StartupP99))
}
