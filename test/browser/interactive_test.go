//go:build browser

package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/chromedp/chromedp"

	"github.com/joiner-autoscaler/joiner/examples"
	"github.com/joiner-autoscaler/joiner/pkg/htmlreport"
	"github.com/joiner-autoscaler/joiner/pkg/replay"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

// browser opens file in headless Chromium and returns a context to drive
// it with, once the page's script says it is ready.
func browser(t *testing.T, file string) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(chromium(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")), chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("no-first-run", true))
	t.Cleanup(cancelAlloc)
	bctx, cancelB := chromedp.NewContext(alloc)
	t.Cleanup(cancelB)
	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+file), chromedp.WaitVisible(`body[data-ready="true"]`)); err != nil {
		t.Fatalf("opening %s: %v", file, err)
	}
	return bctx
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// over scrolls the plot area of the chart matched by sel into view and
// returns its box in the viewport: left, top, width, height.
func over(t *testing.T, ctx context.Context, sel string) [4]float64 {
	t.Helper()
	return eval[[4]float64](t, ctx, fmt.Sprintf(`(() => { const o = document.querySelector(%q).querySelector('.u-over');
		o.scrollIntoView({block: 'center'}); const r = o.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`, sel))
}

func mouse(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func writeReport(t *testing.T, a, b *report.Report) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := htmlreport.Write(f, a, b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return file
}

func defaultRun(t *testing.T, seed int64) *report.Report {
	t.Helper()
	in, err := scenario.Load(examples.Scenarios, "scenarios/default", "default")
	if err != nil {
		t.Fatal(err)
	}
	if seed != 0 {
		in.Scenario.Spec.Seed = seed
	}
	r, err := sim.Run(context.Background(), in, examples.Scenarios, "scenarios/default", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReportStudy does what a user studying a run does, and checks what
// they see: the charts, a hover's values (on every chart at once), a drag
// that zooms every chart of the run and a double-click that zooms out, a
// sort, and a node's life and pods on a click.
func TestReportStudy(t *testing.T) {
	rep := defaultRun(t, 0)
	ctx := browser(t, writeReport(t, rep, nil))

	titles := eval[[]string](t, ctx, `[...document.querySelectorAll('#run-0 .uplot .u-title')].map(e => e.textContent)`)
	want := []string{"Nodes by NodePool", "Nodes by capacity type", "Cost rate (USD/hour)", "Pending pods", "Disruptions by reason (a row per NodePool)", "Pod startup latency (pending → running)"}
	if strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Fatalf("charts %q, want %q", titles, want)
	}
	pools := eval[[]string](t, ctx, `[...document.querySelectorAll('#run-0 .uplot')[0].querySelectorAll('.u-legend .u-series th')].map(e => e.textContent.trim())`)
	if strings.Join(pools, "|") != "time (UTC)|general|gpu|spot" {
		t.Errorf("the nodes chart's legend is %q, want the time and the three NodePools", pools)
	}

	// Hover the middle of the nodes chart: its legend and the cost chart's
	// (the cursors are synced) show the values at that moment.
	legend := func(chart int) []string {
		return eval[[]string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('#run-0 .uplot')[%d].querySelectorAll('.u-legend .u-value')].map(e => e.textContent)`, chart))
	}
	if v := legend(2); v[1] != "–" {
		t.Fatalf("the cost legend shows %q before any hover", v)
	}
	box := over(t, ctx, "#run-0 .uplot")
	x, y := box[0]+box[2]/2, box[1]+box[3]/2
	mouse(t, ctx, chromedp.MouseEvent(chromedp.MouseMoved, x, y))
	if v := legend(0); !strings.HasPrefix(v[0], "Mon 11-30 1") || v[1] == "–" {
		t.Errorf("hovering the middle of the nodes chart shows %q: want a time on Monday around noon and each pool's nodes", v)
	}
	if v := legend(2); !strings.HasPrefix(v[1], "$") {
		t.Errorf("the cost chart's legend shows %q while the nodes chart is hovered: want the cost then", v)
	}

	// Drag across the second quarter of the nodes chart: every chart of the
	// run zooms to that span.
	span := `JSON.stringify(joinerCharts.filter(c => c.joinerGroup === 'run-0').map(c => [Math.round(c.scales.x.min), Math.round(c.scales.x.max)]))`
	full := eval[string](t, ctx, span)
	x0, x1 := box[0]+box[2]/4, box[0]+box[2]/2
	mouse(t, ctx, chromedp.MouseEvent(chromedp.MousePressed, x0, y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, (x0+x1)/2, y, chromedp.ButtonLeft), chromedp.MouseEvent(chromedp.MouseMoved, x1, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, x1, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	zoomed := eval[[][2]float64](t, ctx, `joinerCharts.filter(c => c.joinerGroup === 'run-0').map(c => [c.scales.x.min, c.scales.x.max])`)
	day := float64(rep.End.Sub(rep.Start).Seconds())
	for i, s := range zoomed {
		width := s[1] - s[0]
		if width > day/3 || width < day/6 || s[0] != zoomed[0][0] || s[1] != zoomed[0][1] {
			t.Fatalf("after a drag over a quarter of the chart, chart %d spans %v (all: %v): want every chart on the same quarter of the day", i, s, zoomed)
		}
	}
	mouse(t, ctx, chromedp.MouseClickXY(x, y), chromedp.MouseClickXY(x, y, chromedp.ClickCount(2)))
	if back := eval[string](t, ctx, span); back != full {
		t.Errorf("a double-click left the charts at %s, want them back at %s", back, full)
	}

	// Sort the node table by pods ran, up and down.
	col := func(i int) []string {
		return eval[[]string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('#run-0 .node-table tbody tr')].map(r => r.children[%d].textContent)`, i))
	}
	if n := len(col(0)); n != len(rep.ByNode) {
		t.Fatalf("the node table has %d rows, want %d", n, len(rep.ByNode))
	}
	header := func(label string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(fmt.Sprintf(`//table[contains(@class,"node-table")]//th[text()=%q]`, label))); err != nil {
			t.Fatal(err)
		}
	}
	header("pods ran")
	asc := ints(t, col(8))
	header("pods ran")
	desc := ints(t, col(8))
	for i := 1; i < len(asc); i++ {
		if asc[i] < asc[i-1] || desc[i] > desc[i-1] {
			t.Fatalf("pods ran sorted up %v and down %v", asc, desc)
		}
	}
	if asc[0] == desc[0] {
		t.Fatalf("sorting up and down put %d first both times", asc[0])
	}

	// Click the busiest node: its life, its pods by workload and its span
	// shaded on the charts.
	name := col(0)[0]
	var node report.NodeRecord
	for _, n := range rep.ByNode {
		if n.Name == name {
			node = n
		}
	}
	if err := chromedp.Do(ctx, chromedp.Click(`#run-0 .node-table tbody tr:first-child`)); err != nil {
		t.Fatal(err)
	}
	detail := eval[string](t, ctx, `(() => { const d = document.querySelector('#run-0 .node-detail'); return d.hidden ? '' : d.innerText; })()`)
	for _, want := range []string{"Node " + name, node.InstanceType, node.Zone, fmt.Sprint(node.PodsRan)} {
		if !strings.Contains(detail, want) {
			t.Errorf("the node's panel lacks %q:\n%s", want, detail)
		}
	}
	pods := ints(t, eval[[]string](t, ctx, `[...document.querySelectorAll('#run-0 .node-detail .pods-table tbody tr')].map(r => r.children[1].textContent)`))
	sum := 0
	for _, p := range pods {
		sum += p
	}
	if sum != node.PodsRan || len(pods) != len(node.PodsByWorkload) {
		t.Errorf("the panel lists %v pods by workload, want %d workloads and %d pods", pods, len(node.PodsByWorkload), node.PodsRan)
	}
	if b := eval[[]float64](t, ctx, `joinerCharts[0].joinerBand`); len(b) != 2 || int64(b[0]) != node.Launched.Unix() {
		t.Errorf("the charts shade %v, want the node's life from %d", b, node.Launched.Unix())
	}

	// A disruption's row opens its node.
	if err := chromedp.Do(ctx, chromedp.Click(`#run-0 .disruption-table tbody tr:first-child`)); err != nil {
		t.Fatal(err)
	}
	first := rep.DisruptionEvents[0].Node
	if h := eval[string](t, ctx, `document.querySelector('#run-0 .node-detail h3').textContent`); h != "Node "+first {
		t.Errorf("clicking the first disruption shows %q, want Node %s", h, first)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#run-0 .blocked-table tbody tr').length`); n != len(rep.Blocked) {
		t.Errorf("the holds table has %d rows, want %d", n, len(rep.Blocked))
	}
}

// TestReportCompare: two runs get their totals on shared charts, one line
// each, beside their own sections.
func TestReportCompare(t *testing.T) {
	ctx := browser(t, writeReport(t, defaultRun(t, 1), defaultRun(t, 2)))
	legend := eval[[]string](t, ctx, `[...document.querySelectorAll('#compare .uplot')].map(u => [...u.querySelectorAll('.u-legend .u-series th')].map(e => e.textContent.trim()).join('|'))`)
	if len(legend) != 3 {
		t.Fatalf("%d shared charts, want 3", len(legend))
	}
	for _, l := range legend {
		if l != "time (UTC)|A: default|B: default" {
			t.Errorf("a shared chart's legend is %q, want both runs", l)
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#run-1 .uplot').length`); n != 6 {
		t.Errorf("the second run has %d charts, want 6", n)
	}
}

// TestBacktestPage: the recorded and the simulated cluster on one chart
// per figure, with both values on a hover, and the divergences sorted.
func TestBacktestPage(t *testing.T) {
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	bt := &replay.Backtest{Trace: "t.jsonl.gz", Start: start, End: start.Add(time.Hour), Step: 60}
	for m := 0; m <= 60; m++ {
		rec := replay.Point{Seconds: m * 60, Nodes: 2 + m/20, NodesByCapacityType: map[string]int{"on-demand": 2 + m/20}, CostPerHour: 0.2 * float64(2+m/20), Pending: m % 7}
		simd := replay.Point{Seconds: m * 60, Nodes: 2 + m/15, NodesByCapacityType: map[string]int{"on-demand": 2 + m/15}, CostPerHour: 0.2 * float64(2+m/15), Pending: m % 5}
		bt.Recorded, bt.Simulated = append(bt.Recorded, rec), append(bt.Simulated, simd)
	}
	bt.Divergences = []replay.Divergence{
		{Seconds: 2700, At: start.Add(45 * time.Minute), Recorded: bt.Recorded[45], Simulated: bt.Simulated[45], Why: "b"},
		{Seconds: 600, At: start.Add(10 * time.Minute), Recorded: bt.Recorded[10], Simulated: bt.Simulated[10], Why: "a"},
	}
	file := filepath.Join(t.TempDir(), "backtest.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := htmlreport.WriteBacktest(f, bt); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx := browser(t, file)
	titles := eval[[]string](t, ctx, `[...document.querySelectorAll('#backtest .uplot .u-title')].map(e => e.textContent)`)
	if len(titles) != 4 {
		t.Fatalf("charts %q, want nodes, nodes by capacity type, cost and pending", titles)
	}
	box := over(t, ctx, "#backtest .uplot")
	mouse(t, ctx, chromedp.MouseEvent(chromedp.MouseMoved, box[0]+box[2]*0.9, box[1]+box[3]/2))
	v := eval[[]string](t, ctx, `[...document.querySelectorAll('#backtest .uplot')[0].querySelectorAll('.u-legend .u-value')].map(e => e.textContent)`)
	if len(v) != 3 || v[1] != "4" || v[2] != "5" {
		t.Errorf("hovering near the end shows %q: want the recorded 4 nodes and the simulated 5", v)
	}
	if err := chromedp.Do(ctx, chromedp.Click(`//table[contains(@class,"divergence-table")]//th[text()="when"]`)); err != nil {
		t.Fatal(err)
	}
	why := eval[[]string](t, ctx, `[...document.querySelectorAll('.divergence-table tbody tr')].map(r => r.lastChild.textContent)`)
	if strings.Join(why, "") != "ab" {
		t.Errorf("sorted by time the divergences read %q, want a then b", why)
	}
}

func ints(t *testing.T, ss []string) []int {
	t.Helper()
	out := make([]int, len(ss))
	for i, s := range ss {
		if _, err := fmt.Sscan(s, &out[i]); err != nil {
			t.Fatalf("%q is not a count", s)
		}
	}
	return out
}
