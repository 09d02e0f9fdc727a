package htmlreport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/examples"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

var monday = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// report is a run of d from start as sim.Run shapes one: a sample a minute
// and the nine startup buckets, no node and no pod.
func sampleReport(start time.Time, d time.Duration) *report.Report {
	r := &report.Report{Scenario: "x", Start: start, End: start.Add(d), Pods: report.PodStats{ByWorkload: map[string]report.Startup{}}}
	for _, upTo := range []float64{1, 5, 15, 30, 60, 120, 300, 600, -1} {
		r.Pods.Histogram = append(r.Pods.Histogram, report.Bucket{UpTo: upTo})
	}
	for m := 0; m <= int(d.Minutes()); m++ {
		r.Timeline = append(r.Timeline, report.Sample{Minute: m, NodesByPool: map[string]int{"general": 0}})
	}
	return r
}

// spreadReport is how six pods spread with maxSkew 1 over three zones end:
// one m6i.large each, two nodes and two pods a zone, every node running.
func spreadReport() *report.Report {
	r := sampleReport(monday, time.Hour)
	r.Nodes.Launched, r.Pods.Created, r.Pods.Ran = 6, 6, 6
	for i, zone := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		r.ByZone = append(r.ByZone, report.ZoneStats{Zone: zone, Launched: 2, LaunchedByPool: map[string]int{"general": 2},
			PodsRan: 2, PodsRanByWorkload: map[string]int{"Deployment/spread": 2}})
		for j := range 2 {
			r.ByNode = append(r.ByNode, report.NodeRecord{Name: fmt.Sprintf("general-%d", 2*i+j), NodePool: "general", InstanceType: "m6i.large",
				Zone: zone, CapacityType: "on-demand", Launched: monday.Add(time.Minute), PodsRan: 1, PeakPods: 1})
		}
	}
	for i := range r.Timeline {
		r.Timeline[i].NodesByPool["general"] = min(i, 6)
	}
	return r
}

func render(t *testing.T, a, b *report.Report) string {
	t.Helper()
	var out bytes.Buffer
	if err := Write(&out, a, b); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// pageData is the JSON a page's script reads.
func pageData(t *testing.T, h string) studyData {
	t.Helper()
	const open = `<script id="joiner-data" type="application/json">`
	i := strings.Index(h, open)
	j := strings.Index(h[i:], "</script>")
	if i < 0 || j < 0 {
		t.Fatal("the page carries no data")
	}
	var d studyData
	if err := json.Unmarshal([]byte(h[i+len(open):i+j]), &d); err != nil {
		t.Fatalf("the page's data: %v", err)
	}
	return d
}

// TestZoneAndNodeTables: the page counts per zone and gives its script
// every node, so a zone spread can be read off it.
func TestZoneAndNodeTables(t *testing.T) {
	h := render(t, spreadReport(), nil)
	for _, want := range []string{"<h3>Per zone</h3>", "<tr><td>us-east-1b</td><td>2</td><td>2</td><td>2</td></tr>",
		"<tr><td>Deployment/spread</td><td>2</td><td>2</td><td>2</td></tr>"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	nodes := pageData(t, h).Runs[0].Nodes
	if len(nodes) != 6 {
		t.Fatalf("the page has %d nodes, want 6", len(nodes))
	}
	for _, n := range nodes {
		if n.InstanceType != "m6i.large" || n.Deleted != nil || n.Launched != monday.Add(time.Minute).Unix() {
			t.Errorf("node %+v: want an m6i.large launched a minute in and running at the end", n)
		}
	}
}

// TestNoPodRanHasNoPercentiles: a run in which no pod ran claims no
// startup latency on the page either.
func TestNoPodRanHasNoPercentiles(t *testing.T) {
	r := sampleReport(monday, time.Hour)
	r.Pods.Created, r.Pods.NeverRan = 3, 3
	r.Pods.ByWorkload["Deployment/stranded"] = report.Startup{}
	h := render(t, r, nil)
	for _, want := range []string{"Pod startup    no pod ran (3 created)", "no pod ran: Deployment/stranded", "Pod startup latency (pending → running): no pod ran"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, bad := range []string{"p50", "p90", "p99", " 0s"} {
		if strings.Contains(h, bad) {
			t.Errorf("HTML prints %q though no pod ran", bad)
		}
	}
}

// TestLaunchLoopRow: pods provisioning gave up on are a row with the reason.
func TestLaunchLoopRow(t *testing.T) {
	r := sampleReport(monday, time.Hour)
	r.LaunchLoops = []report.LaunchLoop{{Workload: "Deployment/metrics", Pods: 2, Nodes: 6, Reason: "a pod already there has pod anti-affinity against this pod"}}
	h := render(t, r, nil)
	if !strings.Contains(h, `<h3 class="warning">Launch loops</h3>`) ||
		!strings.Contains(h, "<td>Deployment/metrics</td><td>2</td><td>6</td><td>a pod already there has pod anti-affinity against this pod</td>") {
		t.Errorf("the page has no launch-loop row:\n%s", h)
	}
	if strings.Contains(render(t, sampleReport(monday, time.Hour), nil), "Launch loops") {
		t.Error("a run without launch loops has a launch-loop table")
	}
}

// TestComparisonWarnings: two runs side by side, with a warning for each
// way they are not like for like.
func TestComparisonWarnings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		a, b     *report.Report
		warnings int
	}{
		{"alike", sampleReport(monday, 24*time.Hour), sampleReport(monday, 24*time.Hour), 0},
		{"duration", sampleReport(monday, 24*time.Hour), sampleReport(monday, 6*time.Hour), 1},
		{"start", sampleReport(monday, 24*time.Hour), sampleReport(monday.Add(24*time.Hour), 24*time.Hour), 1},
		{"both", sampleReport(monday, 168*time.Hour), sampleReport(monday.Add(8*time.Hour), 45*time.Second), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := render(t, tc.a, tc.b)
			if c := strings.Count(h, `<p class="warning">warning: the runs differ in `); c != tc.warnings {
				t.Errorf("HTML shows %d warnings, want %d", c, tc.warnings)
			}
			if c := strings.Count(h, `<div class="col" id="run-`); c != 2 {
				t.Errorf("%d columns, want 2", c)
			}
		})
	}
}

// TestBundledScenario: the page of a real run — nodes come and go, pods
// wait, nodes are disrupted — gives its script every sample, node,
// disruption and hold, and is one offline file: it loads nothing.
func TestBundledScenario(t *testing.T) {
	in, err := scenario.Load(examples.Scenarios, "scenarios/default", "default")
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.Run(context.Background(), in, examples.Scenarios, "scenarios/default", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := render(t, r, nil)
	d := pageData(t, h).Runs[0]
	if len(d.Minutes) != len(r.Timeline) || len(d.Cost) != len(r.Timeline) || len(d.Pools["spot"]) != len(r.Timeline) || len(d.CapacityTypes["on-demand"]) != len(r.Timeline) {
		t.Errorf("the page has %d minutes, %d costs, %d spot and %d on-demand counts; want %d of each",
			len(d.Minutes), len(d.Cost), len(d.Pools["spot"]), len(d.CapacityTypes["on-demand"]), len(r.Timeline))
	}
	if len(d.Nodes) != len(r.ByNode) || len(d.Disruptions) != len(r.DisruptionEvents) || len(d.Blocked) != len(r.Blocked) || len(d.Blocked) == 0 {
		t.Errorf("the page has %d nodes, %d disruptions, %d holds; want %d, %d, %d", len(d.Nodes), len(d.Disruptions), len(d.Blocked),
			len(r.ByNode), len(r.DisruptionEvents), len(r.Blocked))
	}
	for _, bad := range []string{"<script src", "<link", "@import", "url(http", "fetch("} {
		if strings.Contains(h, bad) {
			t.Errorf("the page loads something (%q): it must be one offline file", bad)
		}
	}
	if again := render(t, r, nil); again != h {
		t.Error("the same report written twice gave two pages")
	}
}

// TestNoTimeline: a report with no samples (hand-built, or JSON without a
// timeline; scenario.Load refuses a zero duration) renders a page that
// says so, with no samples for the script to draw.
func TestNoTimeline(t *testing.T) {
	noSamples := sampleReport(monday, time.Hour)
	noSamples.Timeline = nil
	for _, tc := range []struct {
		name  string
		r     *report.Report
		notes []string
	}{
		{"no samples", noSamples, []string{"No timeline"}},
		{"nothing at all", &report.Report{Scenario: "x"}, []string{"No timeline", "No startup-latency histogram"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := render(t, tc.r, nil)
			for _, n := range tc.notes {
				if !strings.Contains(h, `<p class="note">`+n) {
					t.Errorf("the page does not say %q", n)
				}
			}
			if d := pageData(t, h).Runs[0]; len(d.Minutes) != 0 {
				t.Errorf("%d samples to draw, want none", len(d.Minutes))
			}
		})
	}
}
