package htmlreport

import (
	"bytes"
	"html/template"
	"image/color"
	"io"
	"time"

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
		{"Nodes", "nodes", func(p replay.Point) float64 { return float64(p.Nodes) }},
		{"Cost per hour", "USD per hour", func(p replay.Point) float64 { return p.CostPerHour }},
		{"Pending pods", "pods", func(p replay.Point) float64 { return float64(p.Pending) }},
	} {
		p, err := twoLines(bt, c.unit, c.f)
		if err != nil {
			return err
		}
		ch, err := svgChart("", p)
		if err != nil {
			return err
		}
		ch.Title = c.title + ": recorded (solid blue) and simulated (dashed red)"
		data.Charts = append(data.Charts, ch)
	}
	return backtestPage.Execute(w, data)
}

// twoLines plots f of the recorded (solid) and the simulated (dashed)
// cluster; the caption, not a legend over the data, says which is which.
// A recording under two hours is drawn in minutes.
func twoLines(bt *replay.Backtest, unit string, f func(replay.Point) float64) (*plot.Plot, error) {
	p := plot.New()
	hoursAxis(p)
	scale := 3600.0
	if bt.End.Sub(bt.Start) < 2*time.Hour {
		p.X.Label.Text, scale = "minutes from start", 60
	}
	p.Y.Label.Text = unit
	for _, s := range []struct {
		name   string
		points []replay.Point
		colour color.RGBA
		dashed bool
	}{{"recorded", bt.Recorded, color.RGBA{R: 31, G: 119, B: 180, A: 255}, false}, {"simulated", bt.Simulated, color.RGBA{R: 214, G: 39, B: 40, A: 255}, true}} {
		pts := make(plotter.XYs, len(s.points))
		for i, pt := range s.points {
			pts[i] = plotter.XY{X: float64(pt.Seconds) / scale, Y: f(pt)}
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
	}
	return p, nil
}

var backtestPage = template.Must(template.New("backtest").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Joiner backtest: {{.Trace}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:60em}
pre{background:#f6f6f6;padding:1em;white-space:pre-wrap}
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
