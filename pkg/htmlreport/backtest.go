package htmlreport

import (
	"bytes"
	"html/template"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/joiner-autoscaler/joiner/pkg/replay"
)

// WriteBacktest writes a backtest as one self-contained page: the error
// figures, the recorded and simulated timelines on one chart each (nodes,
// $/h, pending pods) and the largest divergences.
func WriteBacktest(w io.Writer, bt *replay.Backtest) error {
	var summary bytes.Buffer
	bt.WriteSummary(&summary)
	data := struct {
		Summary string
		Charts  []chart
		*replay.Backtest
	}{Summary: summary.String(), Backtest: bt}
	for _, c := range []struct {
		title, unit string
		f           func(replay.Point) float64
	}{
		{"Nodes, recorded and simulated", "nodes", func(p replay.Point) float64 { return float64(p.Nodes) }},
		{"Cost per hour, recorded and simulated", "USD per hour", func(p replay.Point) float64 { return p.CostPerHour }},
		{"Pending pods, recorded and simulated", "pods", func(p replay.Point) float64 { return float64(p.Pending) }},
	} {
		p, err := twoLines(bt, c.unit, c.f)
		if err != nil {
			return err
		}
		ch, err := svgChart(c.title, p)
		if err != nil {
			return err
		}
		data.Charts = append(data.Charts, ch)
	}
	return backtestPage.Execute(w, data)
}

// twoLines plots f of the recorded (solid) and the simulated (dashed)
// cluster, the legend outside the data, below the chart.
func twoLines(bt *replay.Backtest, unit string, f func(replay.Point) float64) (*plot.Plot, error) {
	p := plot.New()
	hoursAxis(p)
	p.Y.Label.Text = unit
	p.Legend.Top = false
	p.Legend.Left = true
	for _, s := range []struct {
		name   string
		points []replay.Point
		colour color.RGBA
		dashed bool
	}{{"recorded", bt.Recorded, color.RGBA{R: 31, G: 119, B: 180, A: 255}, false}, {"simulated", bt.Simulated, color.RGBA{R: 214, G: 39, B: 40, A: 255}, true}} {
		pts := make(plotter.XYs, len(s.points))
		for i, pt := range s.points {
			pts[i] = plotter.XY{X: float64(pt.Seconds) / 3600, Y: f(pt)}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color = s.colour
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	return p, nil
}

var backtestPage = template.Must(template.New("backtest").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Joiner backtest: {{.Trace}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:60em}
pre{background:#f6f6f6;padding:1em;overflow-x:auto}
figure{margin:1em 0}
figure svg{max-width:100%;height:auto}
table{border-collapse:collapse;margin:1em 0;font-size:90%}
th,td{border:1px solid #ddd;padding:.2em .5em;text-align:right}
td:last-child{text-align:left}
</style></head><body>
<h1>Backtest of {{.Trace}}</h1>
<pre>{{.Summary}}</pre>
{{range .Charts}}<figure><figcaption>{{.Title}}</figcaption>{{.SVG}}</figure>{{end}}
{{if .Divergences}}<h2>Largest divergences</h2>
<table class="divergences"><tr><th>when</th><th>recorded nodes</th><th>simulated nodes</th><th>recorded $/h</th><th>simulated $/h</th><th>what happened before</th></tr>
{{range .Divergences}}<tr><td>{{.At.Format "Mon 15:04:05"}}</td><td>{{.Recorded.Nodes}}</td><td>{{.Simulated.Nodes}}</td><td>{{printf "%.2f" .Recorded.CostPerHour}}</td><td>{{printf "%.2f" .Simulated.CostPerHour}}</td><td>{{.Why}}</td></tr>
{{end}}</table>{{end}}
</body></html>
`))
