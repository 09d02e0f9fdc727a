// Package htmlreport writes a simulation report as an HTML page with charts.
// It stands apart from pkg/sim so that the simulator's importers (the CLI's
// other commands, tests, tools) do not pull in the plotting library.
package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"maps"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

// Write writes a self-contained report (inline SVG charts drawn with
// gonum/plot; nothing is fetched when it opens). b may be nil; with b the
// two scenarios are shown side by side.
func Write(w io.Writer, a, b *sim.Report) error {
	var data struct {
		Warnings []string
		Sections []section
	}
	if a != nil && b != nil {
		data.Warnings = sim.ComparisonWarnings(a, b)
	}
	for _, r := range []*sim.Report{a, b} {
		if r == nil {
			continue
		}
		s, err := reportSection(r)
		if err != nil {
			return err
		}
		data.Sections = append(data.Sections, s)
	}
	return page.Execute(w, data)
}

type section struct {
	Title   string
	Summary string
	// Notes say which charts the report has no data for.
	Notes  []string
	Charts []chart
	// Zones: per zone, nodes launched (in all and per pool) and pods that
	// ran; Pools and Workloads name the columns and rows.
	Zones     []sim.ZoneStats
	Pools     []string
	Workloads []string
	Nodes     []nodeRow
	// LaunchLoops: pods provisioning gave up on, with the reason.
	LaunchLoops []sim.LaunchLoop
}

// nodeRow is one node of the per-node table, times as a person reads them.
type nodeRow struct {
	sim.NodeRecord
	LaunchedAt, DeletedAt string
}

// zoneTable fills the section's per-zone and per-node tables.
func (s *section) zoneTable(r *sim.Report) {
	s.Zones = r.ByZone
	pools, workloads := map[string]bool{}, map[string]bool{}
	for _, z := range r.ByZone {
		for p := range z.LaunchedByPool {
			pools[p] = true
		}
		for k := range z.PodsRanByWorkload {
			workloads[k] = true
		}
	}
	s.Pools, s.Workloads = slices.Sorted(maps.Keys(pools)), slices.Sorted(maps.Keys(workloads))
	const layout = "Mon 01-02 15:04:05"
	for _, n := range r.ByNode {
		row := nodeRow{NodeRecord: n, LaunchedAt: n.Launched.Format(layout), DeletedAt: "running at the end"}
		if n.Deleted != nil {
			row.DeletedAt = n.Deleted.Format(layout)
		}
		s.Nodes = append(s.Nodes, row)
	}
}

type chart struct {
	Title string
	SVG   template.HTML
}

func reportSection(r *sim.Report) (section, error) {
	var buf bytes.Buffer
	sim.WriteSummary(&buf, r)
	s := section{Title: r.Scenario, Summary: buf.String(), LaunchLoops: r.LaunchLoops}
	s.zoneTable(r)
	for _, f := range s.plots(r) {
		title, p, err := f()
		if err != nil {
			return s, err
		}
		c, err := svgChart(title, p)
		if err != nil {
			return s, err
		}
		s.Charts = append(s.Charts, c)
	}
	return s, nil
}

// plots are the charts r has the data for; what it lacks, s notes. A run
// always samples its first minute and fills every startup bucket, but a
// hand-built report, or JSON without them, may not: gonum refuses a bar
// chart of no values, and a line chart of no samples says nothing.
func (s *section) plots(r *sim.Report) []func() (string, *plot.Plot, error) {
	var out []func() (string, *plot.Plot, error)
	if len(r.Timeline) == 0 {
		s.Notes = append(s.Notes, "No timeline: the report has no samples, so no chart of nodes, cost or pending pods over time.")
	} else {
		out = append(out,
			func() (string, *plot.Plot, error) { return nodesChart(r) },
			func() (string, *plot.Plot, error) {
				return seriesChart(r, "Cost rate (USD/hour; spot prices synthetic)", func(x sim.Sample) float64 { return x.CostPerHour })
			},
			func() (string, *plot.Plot, error) {
				return seriesChart(r, "Pending pods", func(x sim.Sample) float64 { return float64(x.Pending) })
			})
	}
	if len(r.Pods.Histogram) == 0 {
		s.Notes = append(s.Notes, "No startup-latency histogram: the report has no buckets.")
	} else {
		out = append(out, func() (string, *plot.Plot, error) { return latencyChart(r) })
	}
	return append(out, func() (string, *plot.Plot, error) { return disruptionChart(r) })
}

// svgChart draws p as inline SVG under title.
func svgChart(title string, p *plot.Plot) (chart, error) {
	p.Title.Text = title
	wt, err := p.WriterTo(7*vg.Inch, 3*vg.Inch, "svg")
	if err != nil {
		return chart{}, fmt.Errorf("drawing chart %q: %w", title, err)
	}
	var out bytes.Buffer
	if _, err := wt.WriteTo(&out); err != nil {
		return chart{}, fmt.Errorf("drawing chart %q: %w", title, err)
	}
	return chart{Title: title, SVG: template.HTML(out.String())}, nil //nolint:gosec // gonum's own SVG
}

func hoursAxis(p *plot.Plot) { p.X.Label.Text = "hours from start" }

func nodesChart(r *sim.Report) (string, *plot.Plot, error) {
	p := plot.New()
	hoursAxis(p)
	p.Y.Label.Text = "nodes"
	pools := map[string]bool{}
	for _, s := range r.Timeline {
		for k := range s.NodesByPool {
			pools[k] = true
		}
	}
	names := slices.Sorted(maps.Keys(pools))
	var args []any
	for _, pool := range names {
		pts := make(plotter.XYs, len(r.Timeline))
		for i, s := range r.Timeline {
			pts[i] = plotter.XY{X: float64(s.Minute) / 60, Y: float64(s.NodesByPool[pool])}
		}
		args = append(args, pool, pts)
	}
	if err := plotutil.AddLines(p, args...); err != nil {
		return "", nil, err
	}
	return "Nodes per NodePool", p, nil
}

func seriesChart(r *sim.Report, title string, f func(sim.Sample) float64) (string, *plot.Plot, error) {
	p := plot.New()
	hoursAxis(p)
	pts := make(plotter.XYs, len(r.Timeline))
	for i, s := range r.Timeline {
		pts[i] = plotter.XY{X: float64(s.Minute) / 60, Y: f(s)}
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return "", nil, err
	}
	l.Color = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	p.Add(l)
	return title, p, nil
}

func latencyChart(r *sim.Report) (string, *plot.Plot, error) {
	p := plot.New()
	p.Y.Label.Text = "pods"
	var vals plotter.Values
	var labels []string
	prev := 0
	for _, b := range r.Pods.Histogram {
		vals = append(vals, float64(b.Count-prev))
		prev = b.Count
		if b.UpTo < 0 {
			labels = append(labels, "more")
		} else {
			labels = append(labels, fmt.Sprintf("≤%gs", b.UpTo))
		}
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		return "", nil, err
	}
	bars.Color = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	p.Add(bars)
	p.NominalX(labels...)
	if r.Pods.Ran == 0 {
		return "Pod startup latency (pending → running): no pod ran", p, nil
	}
	return "Pod startup latency (pending → running)", p, nil
}

func disruptionChart(r *sim.Report) (string, *plot.Plot, error) {
	p := plot.New()
	hoursAxis(p)
	p.Y.Label.Text = "NodePool"
	pools := map[string]bool{}
	reasons := map[string]plotter.XYs{}
	for _, ev := range r.DisruptionEvents {
		pools[ev.NodePool] = true
	}
	names := slices.Sorted(maps.Keys(pools))
	index := map[string]int{}
	for i, n := range names {
		index[n] = i
	}
	for _, ev := range r.DisruptionEvents {
		reasons[ev.Reason] = append(reasons[ev.Reason], plotter.XY{X: ev.Minute / 60, Y: float64(index[ev.NodePool])})
	}
	keys := slices.Sorted(maps.Keys(reasons))
	var args []any
	for _, k := range keys {
		args = append(args, k, reasons[k])
	}
	if len(args) > 0 {
		if err := plotutil.AddScatters(p, args...); err != nil {
			return "", nil, err
		}
	}
	ticks := make([]plot.Tick, len(names))
	for i, n := range names {
		ticks[i] = plot.Tick{Value: float64(i), Label: n}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = -0.5, float64(max(len(names), 1))-0.5
	p.X.Min, p.X.Max = 0, r.End.Sub(r.Start).Hours()
	return "Disruptions by reason", p, nil
}

var page = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Joiner simulation report</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
.cols{display:flex;gap:2em;flex-wrap:wrap}
.col{flex:1;min-width:40em}
pre{background:#f6f6f6;padding:1em;overflow-x:auto}
figure{margin:1em 0}
figure svg{max-width:100%;height:auto}
table{border-collapse:collapse;margin:1em 0;font-size:90%}
th,td{border:1px solid #ddd;padding:.2em .5em;text-align:right}
th:first-child,td:first-child{text-align:left}
.warning{background:#fff3cd;border:1px solid #e0c060;padding:.5em 1em}
.note{color:#555;font-style:italic}
</style></head><body>
<h1>Joiner simulation report</h1>
{{range .Warnings}}<p class="warning">{{.}}</p>
{{end}}<div class="cols">{{range .Sections}}<div class="col">
<h2>{{.Title}}</h2>
<pre>{{.Summary}}</pre>
{{range .Notes}}<p class="note">{{.}}</p>
{{end}}{{range .Charts}}<figure><figcaption>{{.Title}}</figcaption>{{.SVG}}</figure>{{end}}
{{if .LaunchLoops}}<h3 class="warning">Launch loops</h3>
<table class="loops"><tr><th>workload</th><th>pods</th><th>nodes launched for them</th><th>why they never bound</th></tr>
{{range .LaunchLoops}}<tr><td>{{.Workload}}</td><td>{{.Pods}}</td><td>{{.Nodes}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>{{end}}
{{$s := .}}<h3>Per zone</h3>
<table class="zones"><tr><th>zone</th><th>nodes launched</th>{{range .Pools}}<th>{{.}}</th>{{end}}<th>pods ran</th></tr>
{{range .Zones}}{{$z := .}}<tr><td>{{.Zone}}</td><td>{{.Launched}}</td>{{range $s.Pools}}<td>{{index $z.LaunchedByPool .}}</td>{{end}}<td>{{.PodsRan}}</td></tr>
{{end}}</table>
{{if .Workloads}}<table class="spread"><tr><th>pods ran per workload</th>{{range .Zones}}<th>{{.Zone}}</th>{{end}}</tr>
{{range $w := .Workloads}}<tr><td>{{$w}}</td>{{range $s.Zones}}<td>{{index .PodsRanByWorkload $w}}</td>{{end}}</tr>
{{end}}</table>{{end}}
<details><summary>Per node ({{len .Nodes}})</summary>
<table class="nodes"><tr><th>node</th><th>NodePool</th><th>instance type</th><th>zone</th><th>capacity type</th><th>launched</th><th>deleted</th><th>reason</th><th>pods ran</th><th>peak pods</th></tr>
{{range .Nodes}}<tr><td>{{.Name}}</td><td>{{.NodePool}}</td><td>{{.InstanceType}}</td><td>{{.Zone}}</td><td>{{.CapacityType}}</td><td>{{.LaunchedAt}}</td><td>{{.DeletedAt}}</td><td>{{.DeletedReason}}</td><td>{{.PodsRan}}</td><td>{{.PeakPods}}</td></tr>
{{end}}</table></details>
</div>{{end}}</div>
</body></html>
`))
