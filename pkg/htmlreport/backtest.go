package htmlreport

import (
	"bytes"
	"html/template"
	"io"

	"github.com/joiner-autoscaler/joiner/pkg/replay"
)

// WriteBacktest writes a backtest as one self-contained page: the error
// figures, the recorded and simulated timelines on one chart each (nodes,
// nodes by capacity type, $/h, pending pods), zoomed together, and the
// largest divergences in a table that sorts.
func WriteBacktest(w io.Writer, bt *replay.Backtest) error {
	var summary bytes.Buffer
	bt.WriteSummary(&summary)
	data := struct {
		assets
		Trace   string
		Summary string
		Data    backtestData
	}{assets: pageAssets(), Trace: bt.Trace, Summary: summary.String()}
	d := &data.Data.Backtest
	d.Start, d.Recorded, d.Simulated = bt.Start.Unix(), bt.Recorded, bt.Simulated
	d.Divergences = []divergenceJSON{}
	for _, v := range bt.Divergences {
		d.Divergences = append(d.Divergences, divergenceJSON{At: v.At.Unix(), RecordedNodes: v.Recorded.Nodes, SimulatedNodes: v.Simulated.Nodes,
			RecordedCost: v.Recorded.CostPerHour, SimulatedCost: v.Simulated.CostPerHour, Why: v.Why})
	}
	return backtestPage.Execute(w, data)
}

type backtestData struct {
	Backtest struct {
		Start       int64            `json:"start"`
		Recorded    []replay.Point   `json:"recorded"`
		Simulated   []replay.Point   `json:"simulated"`
		Divergences []divergenceJSON `json:"divergences"`
	} `json:"backtest"`
}

type divergenceJSON struct {
	At             int64   `json:"at"`
	RecordedNodes  int     `json:"recordedNodes"`
	SimulatedNodes int     `json:"simulatedNodes"`
	RecordedCost   float64 `json:"recordedCost"`
	SimulatedCost  float64 `json:"simulatedCost"`
	Why            string  `json:"why"`
}

var backtestPage = template.Must(template.New("backtest").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Joiner backtest: {{.Trace}}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{{.UPlotCSS}}</style>
<style>{{.StudyCSS}}</style>
</head><body>
<h1>Backtest of {{.Trace}}</h1>
<p class="help">Recorded: solid blue; simulated: dashed red. Hover a chart for both values; drag across one to zoom every chart to that span, double-click to zoom out. Click a table's header to sort it.</p>
<pre>{{.Summary}}</pre>
<section id="backtest"></section>
<section id="divergences"></section>
<script id="joiner-data" type="application/json">{{.Data}}</script>
<script>{{.UPlotJS}}</script>
<script>{{.StudyJS}}</script>
</body></html>
`))
