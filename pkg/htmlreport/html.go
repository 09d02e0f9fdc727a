// Package htmlreport writes Joiner's reports as HTML pages one opens
// offline: a simulation (one run or two side by side), a backtest, a tune.
// The simulation and backtest pages are interactive — timelines drawn with
// uPlot, which is embedded (fetched and pinned by hack/uplot.sh), tables
// that sort, a node's life and pods on a click — and read their data from
// JSON in the page itself. The package stands apart from pkg/sim so that
// the simulator's importers do not pull in the plotting library (the tune
// page's charts are gonum/plot's SVG).
package htmlreport

import (
	"bytes"
	_ "embed"
	"html/template"
	"io"
	"maps"
	"slices"

	"github.com/joiner-autoscaler/joiner/pkg/report"
)

var (
	//go:embed assets/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uPlot.min.css
	uplotCSS string
	//go:embed study.js
	studyJS string
	//go:embed study.css
	studyCSS string
)

// assets are what every interactive page carries inline.
type assets struct {
	UPlotJS, StudyJS   template.JS
	UPlotCSS, StudyCSS template.CSS
}

func pageAssets() assets {
	return assets{UPlotJS: template.JS(uplotJS), StudyJS: template.JS(studyJS), //nolint:gosec // our own, embedded
		UPlotCSS: template.CSS(uplotCSS), StudyCSS: template.CSS(studyCSS)} //nolint:gosec // our own, embedded
}

// Write writes a self-contained report of a, and of b beside it when b is
// not nil: nothing is fetched when it opens.
func Write(w io.Writer, a, b *report.Report) error {
	data := struct {
		assets
		Warnings []string
		Sections []section
		Data     studyData
	}{assets: pageAssets()}
	if a != nil && b != nil {
		data.Warnings = report.ComparisonWarnings(a, b)
	}
	for i, r := range []*report.Report{a, b} {
		if r == nil {
			continue
		}
		s, d := reportSection(r), runData(r)
		if a != nil && b != nil { // two runs of one scenario share its name
			s.Title = string(rune('A'+i)) + ": " + s.Title
			d.Title = s.Title
		}
		data.Sections = append(data.Sections, s)
		data.Data.Runs = append(data.Data.Runs, d)
	}
	return page.Execute(w, data)
}

// studyData is the JSON the page's script reads.
type studyData struct {
	Runs []runJSON `json:"runs"`
}

// runJSON is one run as the script draws it: the timeline as columns (a
// value per sample), times as seconds since the epoch.
type runJSON struct {
	Title         string                   `json:"title"`
	Start         int64                    `json:"start"`
	End           int64                    `json:"end"`
	Minutes       []int                    `json:"minutes"`
	Pools         map[string][]int         `json:"pools"`
	CapacityTypes map[string][]int         `json:"capacityTypes"`
	Cost          []float64                `json:"cost"`
	Pending       []int                    `json:"pending"`
	Disrupting    []int                    `json:"disrupting"`
	Histogram     []report.Bucket          `json:"histogram"`
	Ran           int                      `json:"ran"`
	Nodes         []nodeJSON               `json:"nodes"`
	Disruptions   []report.DisruptionEvent `json:"disruptions"`
	Blocked       []report.BlockedRecord   `json:"blocked"`
}

type nodeJSON struct {
	Name           string         `json:"name"`
	NodePool       string         `json:"nodePool"`
	InstanceType   string         `json:"instanceType"`
	Zone           string         `json:"zone"`
	CapacityType   string         `json:"capacityType"`
	Reservation    string         `json:"reservation,omitempty"`
	Launched       int64          `json:"launched"`
	Deleted        *int64         `json:"deleted"`
	DeletedReason  string         `json:"deletedReason,omitempty"`
	Failed         *int64         `json:"failed,omitempty"`
	PodsRan        int            `json:"podsRan"`
	PeakPods       int            `json:"peakPods"`
	PodsByWorkload map[string]int `json:"podsByWorkload,omitempty"`
}

func runData(r *report.Report) runJSON {
	d := runJSON{Title: r.Scenario, Start: r.Start.Unix(), End: r.End.Unix(), Pools: map[string][]int{}, CapacityTypes: map[string][]int{},
		Histogram: r.Pods.Histogram, Ran: r.Pods.Ran, Disruptions: r.DisruptionEvents, Blocked: r.Blocked}
	pools, types := map[string]bool{}, map[string]bool{}
	for _, s := range r.Timeline {
		for k := range s.NodesByPool {
			pools[k] = true
		}
		for k := range s.NodesByCapacityType {
			types[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(pools)) {
		d.Pools[k] = make([]int, 0, len(r.Timeline))
	}
	for _, k := range slices.Sorted(maps.Keys(types)) {
		d.CapacityTypes[k] = make([]int, 0, len(r.Timeline))
	}
	for _, s := range r.Timeline {
		d.Minutes = append(d.Minutes, s.Minute)
		for k := range d.Pools {
			d.Pools[k] = append(d.Pools[k], s.NodesByPool[k])
		}
		for k := range d.CapacityTypes {
			d.CapacityTypes[k] = append(d.CapacityTypes[k], s.NodesByCapacityType[k])
		}
		d.Cost = append(d.Cost, s.CostPerHour)
		d.Pending = append(d.Pending, s.Pending)
		d.Disrupting = append(d.Disrupting, s.Disrupting)
	}
	for _, n := range r.ByNode {
		j := nodeJSON{Name: n.Name, NodePool: n.NodePool, InstanceType: n.InstanceType, Zone: n.Zone, CapacityType: n.CapacityType,
			Reservation: n.Reservation, Launched: n.Launched.Unix(), DeletedReason: n.DeletedReason, PodsRan: n.PodsRan, PeakPods: n.PeakPods,
			PodsByWorkload: n.PodsByWorkload}
		if n.Deleted != nil {
			t := n.Deleted.Unix()
			j.Deleted = &t
		}
		if n.Failed != nil {
			t := n.Failed.Unix()
			j.Failed = &t
		}
		d.Nodes = append(d.Nodes, j)
	}
	return d
}

type section struct {
	Title   string
	Summary string
	// Notes say which charts the report has no data for.
	Notes []string
	// Zones: per zone, nodes launched (in all and per pool) and pods that
	// ran; Pools and Workloads name the columns and rows.
	Zones     []report.ZoneStats
	Pools     []string
	Workloads []string
	// LaunchLoops: pods provisioning gave up on, with the reason.
	LaunchLoops []report.LaunchLoop
}

func reportSection(r *report.Report) section {
	var buf bytes.Buffer
	report.WriteSummary(&buf, r)
	s := section{Title: r.Scenario, Summary: buf.String(), LaunchLoops: r.LaunchLoops, Zones: r.ByZone}
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
	// A run always samples its first minute and fills every startup
	// bucket, but a hand-built report, or JSON without them, may not.
	if len(r.Timeline) == 0 {
		s.Notes = append(s.Notes, "No timeline: the report has no samples, so no chart of nodes, cost or pending pods over time.")
	}
	if len(r.Pods.Histogram) == 0 {
		s.Notes = append(s.Notes, "No startup-latency histogram: the report has no buckets.")
	}
	return s
}

var page = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Joiner simulation report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{{.UPlotCSS}}</style>
<style>{{.StudyCSS}}</style>
</head><body>
<h1>Joiner simulation report</h1>
<p class="help">Hover a chart for its values; drag across one to zoom every chart of the run to that span, double-click to zoom out. Click a table's header to sort it, a node to see its life and pods.</p>
{{range .Warnings}}<p class="warning">{{.}}</p>
{{end}}{{if gt (len .Sections) 1}}<section id="compare"><h2>Both runs</h2></section>
{{end}}<div class="cols">{{range $i, $s := .Sections}}<div class="col" id="run-{{$i}}">
<h2>{{.Title}}</h2>
<details open><summary>Summary</summary><pre>{{.Summary}}</pre></details>
{{range .Notes}}<p class="note">{{.}}</p>
{{end}}<div class="charts"></div>
{{if .LaunchLoops}}<h3 class="warning">Launch loops</h3>
<table class="loops"><tr><th>workload</th><th>pods</th><th>nodes launched for them</th><th>why they never bound</th></tr>
{{range .LaunchLoops}}<tr><td>{{.Workload}}</td><td>{{.Pods}}</td><td>{{.Nodes}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>{{end}}
<aside class="node-detail" hidden></aside>
<div class="nodes"></div>
<div class="disruptions"></div>
<div class="blocked"></div>
<h3>Per zone</h3>
<table class="zones"><tr><th>zone</th><th>nodes launched</th>{{range .Pools}}<th>{{.}}</th>{{end}}<th>pods ran</th></tr>
{{range .Zones}}{{$z := .}}<tr><td>{{.Zone}}</td><td>{{.Launched}}</td>{{range $s.Pools}}<td>{{index $z.LaunchedByPool .}}</td>{{end}}<td>{{.PodsRan}}</td></tr>
{{end}}</table>
{{if .Workloads}}<table class="spread"><tr><th>pods ran per workload</th>{{range .Zones}}<th>{{.Zone}}</th>{{end}}</tr>
{{range $w := .Workloads}}<tr><td>{{$w}}</td>{{range $s.Zones}}<td>{{index .PodsRanByWorkload $w}}</td>{{end}}</tr>
{{end}}</table>{{end}}
</div>{{end}}</div>
<script id="joiner-data" type="application/json">{{.Data}}</script>
<script>{{.UPlotJS}}</script>
<script>{{.StudyJS}}</script>
</body></html>
`))
