package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/joiner-autoscaler/joiner/pkg/tune"
)

// WriteTune writes a tuning result as a self-contained page: the cost vs
// p99 startup chart (front, baseline and choice marked) and the table.
func WriteTune(w io.Writer, res *tune.Result) error {
	p, err := TuneChart(res)
	if err != nil {
		return err
	}
	c, err := svgChart("Cost vs p99 pod startup, every variant run in full", p)
	if err != nil {
		return err
	}
	var table bytes.Buffer
	res.WriteTable(&table)
	return tunePage.Execute(w, struct {
		Title string
		Chart chart
		Table string
	}{res.Scenario + ", space " + res.Space, c, table.String()})
}

// TuneChart is the scatter of cost against p99 startup: variants that meet
// the constraints, those that do not, the Pareto front, the baseline and
// the chosen variant. Variants none of whose pods ran have no p99 and are
// left out.
func TuneChart(res *tune.Result) (*plot.Plot, error) {
	p := plot.New()
	p.X.Label.Text = "cost (USD over the run)"
	p.Y.Label.Text = "p99 pod startup (s)"
	var other, broken, front, base, chosen plotter.XYs
	for _, v := range res.Variants {
		m := v.Metrics
		if v.Error != "" || math.IsInf(m.P99StartupSeconds, 0) {
			continue
		}
		pt := plotter.XY{X: m.CostUSD, Y: m.P99StartupSeconds}
		switch {
		case v.Baseline:
			base = append(base, pt)
		case res.Chosen != nil && *res.Chosen == v.Index:
			chosen = append(chosen, pt)
		case v.Front:
			front = append(front, pt)
		case v.Feasible():
			other = append(other, pt)
		default:
			broken = append(broken, pt)
		}
	}
	series := []struct {
		name  string
		pts   plotter.XYs
		c     color.RGBA
		shape draw.GlyphDrawer
		size  vg.Length
	}{
		{"meets the constraints", other, color.RGBA{R: 150, G: 150, B: 150, A: 255}, draw.CircleGlyph{}, 2.5},
		{"breaks a constraint", broken, color.RGBA{R: 230, G: 140, B: 140, A: 255}, draw.CrossGlyph{}, 2.5},
		{"Pareto front", front, color.RGBA{R: 31, G: 119, B: 180, A: 255}, draw.CircleGlyph{}, 4},
		{"baseline", base, color.RGBA{A: 255}, draw.PyramidGlyph{}, 5},
		{"chosen", chosen, color.RGBA{R: 44, G: 160, B: 44, A: 255}, draw.BoxGlyph{}, 4.5},
	}
	for _, s := range series {
		if len(s.pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.pts)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: s.c, Shape: s.shape, Radius: s.size}
		p.Add(sc)
		p.Legend.Add(s.name, sc)
	}
	p.Legend.Top = false // bottom right: cheap and fast is bottom left, where the choice is
	p.Add(plotter.NewGrid())
	return p, nil
}

var tunePage = template.Must(template.New("tune").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Joiner tuning report</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
pre{background:#f6f6f6;padding:1em;overflow-x:auto}
figure svg{max-width:100%;height:auto}
</style></head><body>
<h1>Joiner tuning report: {{.Title}}</h1>
<figure><figcaption>{{.Chart.Title}}</figcaption>{{.Chart.SVG}}</figure>
<pre>{{.Table}}</pre>
</body></html>
`))

type chart struct {
	Title string
	SVG   template.HTML
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
