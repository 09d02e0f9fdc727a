package htmlreport

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/tune"
)

// TestWriteTune: the page has the chart with each kind of point the result
// has, in the legend, and the table; a variant no pod of which ran (no
// p99) is left out of the chart rather than failing it.
func TestWriteTune(t *testing.T) {
	chosen := 2
	m := func(c, p float64) tune.Metrics { return tune.Metrics{CostUSD: c, P99StartupSeconds: p} }
	for _, tc := range []struct {
		name     string
		variants []tune.VariantResult
		want     []string
		not      []string
	}{
		{"every kind", []tune.VariantResult{
			{Index: 0, Baseline: true, Metrics: m(56, 93)},
			{Index: 1, Metrics: m(50, 92), Front: true},
			{Index: 2, Metrics: m(45, 86), Front: true},
			{Index: 3, Metrics: m(54, 127), Violations: []string{"p99Startup"}},
			{Index: 4, Metrics: m(51, 93)},
			{Index: 5, Metrics: m(40, math.Inf(1)), Violations: []string{"p99Startup"}},
		}, []string{"<svg", "chosen: variant 2", ">Pareto front<", ">baseline<", ">chosen<", ">breaks a constraint<", ">meets the constraints<"}, nil},
		{"baseline only", []tune.VariantResult{{Index: 0, Baseline: true, Metrics: m(56, 93)}},
			[]string{"<svg", ">baseline<"}, []string{"Pareto front", "breaks a constraint", "chosen"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &tune.Result{Header: tune.Header{Scenario: "default", Space: "s", Search: tune.SearchInfo{Mode: "exhaustive", Seeds: 1}}, Variants: tc.variants}
			if len(tc.variants) > 1 {
				res.Chosen = &chosen
				res.Finalists = []tune.Finalist{{Index: 0, Baseline: true, Mean: m(56, 93)}, {Index: 2, Mean: m(45, 86)}}
			}
			var b bytes.Buffer
			if err := WriteTune(&b, res); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(b.String(), ">"+w+"<") {
					t.Errorf("page has %q", w)
				}
			}
		})
	}
}
