package tune

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Result is a search's outcome; its JSON is deterministic for a scenario,
// space and options.
type Result struct {
	// Header is what the search was (its fields come first in the JSON,
	// as a Job's lines carry them).
	Header
	// Variants ran over the whole duration with the scenario's seed, the
	// baseline first.
	Variants []VariantResult `json:"variants"`
	// Front are the indexes (into Variants' Index) of the Pareto front of
	// the variants that meet the constraints.
	Front []int `json:"front"`
	// Finalists are the front and the baseline over every seed.
	Finalists []Finalist `json:"finalists"`
	// Chosen is the finalist whose mean meets the constraints and is best by
	// the objectives in order; null when none does.
	Chosen *int `json:"chosen"`
}

// ConstraintLimit is a constraint as the result states it.
type ConstraintLimit struct {
	Metric string  `json:"metric"`
	Max    float64 `json:"max"`
	// Baseline: the bound is the baseline's value of the metric (its
	// seed's run for the front, its mean for the finalists); Max is 0.
	Baseline bool `json:"baseline,omitempty"`
}

// SearchInfo says how the variants were found.
type SearchInfo struct {
	// Mode: exhaustive, sampled, or job (a sample run in full by a Job).
	Mode       string `json:"mode"`
	SpaceSize  int    `json:"spaceSize"`
	Sampler    string `json:"sampler,omitempty"`
	SampleSeed int64  `json:"sampleSeed,omitempty"`
	Samples    int    `json:"samples,omitempty"`
	Seeds      int    `json:"seeds"`
	Rungs      []Rung `json:"rungs"`
}

// Rung is one round of successive halving: how many variants ran, over
// how long a horizon.
type Rung struct {
	Horizon  string `json:"horizon"`
	Variants int    `json:"variants"`
}

// VariantResult is one variant's run.
type VariantResult struct {
	Index      int       `json:"index"`
	Baseline   bool      `json:"baseline,omitempty"`
	Choice     []int     `json:"choice,omitempty"`
	Settings   []Setting `json:"settings,omitempty"`
	Metrics    Metrics   `json:"metrics"`
	Violations []string  `json:"violations,omitempty"`
	Front      bool      `json:"front,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// Feasible reports whether the variant ran and met the constraints.
func (v VariantResult) Feasible() bool { return v.Error == "" && len(v.Violations) == 0 }

// Finalist is a variant over every seed.
type Finalist struct {
	Index    int  `json:"index"`
	Baseline bool `json:"baseline,omitempty"`
	// Mean over the seeds; Spread is the largest less the smallest.
	Mean       Metrics   `json:"mean"`
	Spread     Metrics   `json:"spread"`
	PerSeed    []Metrics `json:"perSeed"`
	Violations []string  `json:"violations,omitempty"`
}

// Header is what a result says of its search, beside the variants: a
// Job's lines each carry it, so that --gather needs nothing else.
type Header struct {
	Scenario    string            `json:"scenario"`
	Space       string            `json:"space"`
	Seed        int64             `json:"seed"`
	Objectives  []string          `json:"objectives"`
	Constraints []ConstraintLimit `json:"constraints"`
	Search      SearchInfo        `json:"search"`
	Knobs       []Dimension       `json:"knobs"`
}

func (p *Plan) header(info SearchInfo) Header {
	sp := p.Space.Spec
	// The scenario's own name, not the directory it was read from: a Job's
	// pods read it from another path than a local search.
	name := p.In.Scenario.Metadata.Name
	if name == "" {
		name = p.In.Name
	}
	h := Header{Scenario: name, Space: p.Space.Metadata.Name, Seed: p.In.Scenario.Spec.Seed, Objectives: sp.Objectives,
		Search: info, Knobs: p.Dims, Constraints: []ConstraintLimit{}}
	for _, c := range sp.Constraints {
		h.Constraints = append(h.Constraints, ConstraintLimit{Metric: c.Metric, Max: c.max, Baseline: c.baseline})
	}
	return h
}

// constraints are the bounds to check, those relative to the baseline
// taken from base; with base nil (the baseline has not run, or failed) they
// are left out.
func (h Header) constraints(base *Metrics) []Constraint {
	return resolve(h.Constraints, base)
}

func resolve(limits []ConstraintLimit, base *Metrics) []Constraint {
	var cs []Constraint
	for _, c := range limits {
		switch {
		case !c.Baseline:
			cs = append(cs, Constraint{Metric: c.Metric, max: c.Max})
		case base != nil:
			cs = append(cs, Constraint{Metric: c.Metric, max: base.Get(c.Metric)})
		}
	}
	return cs
}

// assemble marks the constraints and the front over results (the
// baseline first).
func assemble(h Header, results []VariantResult) *Result {
	res := &Result{Header: h, Variants: results, Front: []int{}, Finalists: []Finalist{}}
	var base *Metrics
	for _, v := range results {
		if v.Baseline && v.Error == "" {
			base = &v.Metrics
		}
	}
	cs := h.constraints(base)
	var feasible []int
	var ms []Metrics
	for i := range res.Variants {
		v := &res.Variants[i]
		if v.Error != "" {
			continue
		}
		v.Violations = violations(v.Metrics, cs)
		if v.Feasible() {
			feasible = append(feasible, i)
			ms = append(ms, v.Metrics)
		}
	}
	for _, f := range Front(ms, h.Objectives) {
		res.Variants[feasible[f]].Front = true
		res.Front = append(res.Front, res.Variants[feasible[f]].Index)
	}
	return res
}

// finalists are the positions in Variants of the front and the baseline.
func (r *Result) finalists() []int {
	var out []int
	for i, v := range r.Variants {
		if v.Front || (v.Baseline && v.Error == "") {
			out = append(out, i)
		}
	}
	return out
}

// robustness fills the finalists from their runs over the seeds, and the
// choice.
func (r *Result) robustness(perSeed map[int][]Metrics, seeds int) {
	var base *Metrics
	for _, i := range r.finalists() {
		if v := r.Variants[i]; v.Baseline {
			m, _ := meanSpread(perSeed[v.Index])
			base = &m
		}
	}
	cs := resolve(r.Constraints, base)
	best := -1
	for _, i := range r.finalists() {
		v := r.Variants[i]
		runs := perSeed[v.Index]
		f := Finalist{Index: v.Index, Baseline: v.Baseline, PerSeed: runs}
		f.Mean, f.Spread = meanSpread(runs)
		f.Violations = violations(f.Mean, cs)
		r.Finalists = append(r.Finalists, f)
		if len(f.Violations) > 0 {
			continue
		}
		if best < 0 || r.better(f, r.Finalists[best]) {
			best = len(r.Finalists) - 1
		}
	}
	if best >= 0 {
		idx := r.Finalists[best].Index
		r.Chosen = &idx
	}
}

// better orders finalists by their means, objective by objective; on a
// tie the one that changes fewer knobs from the input (the smaller change to
// review), then the lower index.
func (r *Result) better(a, b Finalist) bool {
	for _, o := range r.Objectives {
		if x, y := a.Mean.Get(o), b.Mean.Get(o); x != y {
			return x < y
		}
	}
	if ca, cb := r.changes(a.Index), r.changes(b.Index); ca != cb {
		return ca < cb
	}
	return a.Index < b.Index
}

// changes counts the knobs a variant sets otherwise than the input.
func (r *Result) changes(index int) int {
	v := r.Variant(index)
	n := 0
	for i, c := range v.Choice {
		if i < len(r.Knobs) && r.Knobs[i].Input != c {
			n++
		}
	}
	return n
}

// changedSettings are the settings a variant sets otherwise than the input.
func (r *Result) changedSettings(v VariantResult) []Setting {
	var out []Setting
	for i, s := range v.Settings {
		if i < len(r.Knobs) && i < len(v.Choice) && r.Knobs[i].Input == v.Choice[i] {
			continue
		}
		out = append(out, s)
	}
	return out
}

func meanSpread(ms []Metrics) (mean, spread Metrics) {
	if len(ms) == 0 {
		return worst(), Metrics{}
	}
	for _, name := range metricNames {
		lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
		for _, m := range ms {
			x := m.Get(name)
			lo, hi, sum = math.Min(lo, x), math.Max(hi, x), sum+x
		}
		mv, sv := round(sum/float64(len(ms)), 1e4), round(hi-lo, 1e4)
		if math.IsInf(hi, 1) {
			mv, sv = math.Inf(1), 0
		}
		set(&mean, name, mv)
		set(&spread, name, sv)
	}
	return mean, spread
}

func set(m *Metrics, name string, v float64) {
	switch name {
	case MetricCost:
		m.CostUSD = v
	case MetricP99Startup:
		m.P99StartupSeconds = v
	case MetricDisruptionsPerNodeDay:
		m.DisruptionsPerNodeDay = v
	case MetricPodsNeverRan:
		m.PodsNeverRan = v
	}
}

// Variant returns the result of the variant with index i.
func (r *Result) Variant(i int) *VariantResult {
	for k := range r.Variants {
		if r.Variants[k].Index == i {
			return &r.Variants[k]
		}
	}
	return nil
}

// Baseline is the baseline's finalist entry, if it ran.
func (r *Result) Baseline() *Finalist {
	for k := range r.Finalists {
		if r.Finalists[k].Baseline {
			return &r.Finalists[k]
		}
	}
	return nil
}

// Chose is the chosen finalist, or nil.
func (r *Result) Chose() *Finalist {
	if r.Chosen == nil {
		return nil
	}
	for k := range r.Finalists {
		if r.Finalists[k].Index == *r.Chosen {
			return &r.Finalists[k]
		}
	}
	return nil
}

func num(v float64, unit string) string {
	if math.IsInf(v, 1) {
		return "—"
	}
	switch unit {
	case "$":
		return fmt.Sprintf("$%.2f", v)
	case "s":
		return fmt.Sprintf("%.0fs", v)
	case "n":
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// WriteTable prints the front (baseline marked) and the finalists over the
// seeds, then the choice.
func (r *Result) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "scenario %s, space %s: %s search of %d variants", r.Scenario, r.Space, r.Search.Mode, r.Search.SpaceSize)
	if r.Search.Mode == "sampled" {
		fmt.Fprintf(w, " (%d sampled by %s, seed %d; halving over", r.Search.Samples, r.Search.Sampler, r.Search.SampleSeed)
		for _, g := range r.Search.Rungs {
			fmt.Fprintf(w, " %d×%s", g.Variants, g.Horizon)
		}
		fmt.Fprint(w, ")")
	}
	fmt.Fprintf(w, "; %d ran in full, %d meet the constraints", len(r.Variants), r.feasibleCount())
	if len(r.Constraints) > 0 {
		var cs []string
		for _, c := range r.Constraints {
			unit := map[string]string{MetricCost: " USD", MetricP99Startup: "s"}[c.Metric]
			if c.Baseline {
				cs = append(cs, c.Metric+" ≤ the baseline's")
				continue
			}
			cs = append(cs, fmt.Sprintf("%s ≤ %g%s", c.Metric, c.Max, unit))
		}
		fmt.Fprintf(w, " (%s)", strings.Join(cs, ", "))
	}
	r.writeFront(w)
	r.writeFinalists(w)
	fmt.Fprintln(w)
	c, b := r.Chose(), r.Baseline()
	switch {
	case c == nil:
		fmt.Fprintln(w, "chosen: none — no finalist's mean meets the constraints")
	case c.Baseline:
		fmt.Fprintln(w, "chosen: the baseline — no variant beats the scenario's NodePools on the mean")
	default:
		fmt.Fprintf(w, "chosen: variant %d: %s\n", c.Index, settingsText(r.changedSettings(*r.Variant(c.Index))))
		if b != nil && b.Mean.CostUSD > 0 {
			fmt.Fprintf(w, "  cost %s vs %s (%+.1f%%), p99 startup %s vs %s, on the mean of %d seeds\n", num(c.Mean.CostUSD, "$"), num(b.Mean.CostUSD, "$"),
				100*(c.Mean.CostUSD-b.Mean.CostUSD)/b.Mean.CostUSD, num(c.Mean.P99StartupSeconds, "s"), num(b.Mean.P99StartupSeconds, "s"), r.Search.Seeds)
		}
	}
}

// writeFront prints the Pareto front and the baseline.
func (r *Result) writeFront(w io.Writer) {
	fmt.Fprintf(w, "\n\nPareto front (seed %d; settings where they differ from the input):\n", r.Seed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  variant\tcost\tp99 startup\tdisruptions/node-day\tnever ran\tsettings")
	for _, v := range r.Variants {
		if !v.Front && !v.Baseline {
			continue
		}
		mark := " "
		if r.Chosen != nil && *r.Chosen == v.Index {
			mark = "*"
		}
		name := fmt.Sprint(v.Index)
		if v.Baseline {
			name += " (baseline)"
			if !v.Front {
				name += " (off the front)"
			}
		}
		m := v.Metrics
		settings := settingsText(r.changedSettings(v))
		switch {
		case v.Baseline:
			settings = "the scenario's NodePools as they are"
		case settings == "":
			settings = "(the input's values)"
		}
		if v.Error != "" {
			fmt.Fprintf(tw, "%s %s\t\t\t\t\terror: %s\n", mark, name, v.Error)
			continue
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\n", mark, name, num(m.CostUSD, "$"), num(m.P99StartupSeconds, "s"),
			num(m.DisruptionsPerNodeDay, ""), num(m.PodsNeverRan, "n"), settings)
	}
	_ = tw.Flush()
}

// writeFinalists prints the finalists' means over the seeds.
func (r *Result) writeFinalists(w io.Writer) {
	if len(r.Finalists) == 0 {
		return
	}
	fmt.Fprintf(w, "\nFinalists over %d seeds (mean ± half the spread):\n", r.Search.Seeds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  variant\tcost\tp99 startup\tdisruptions/node-day\tnever ran\t")
	for _, f := range r.Finalists {
		mark := " "
		if r.Chosen != nil && *r.Chosen == f.Index {
			mark = "*"
		}
		name := fmt.Sprint(f.Index)
		if f.Baseline {
			name += " (baseline)"
		}
		pm := func(name, unit string) string {
			return num(f.Mean.Get(name), unit) + " ± " + num(f.Spread.Get(name)/2, unit)
		}
		note := ""
		if len(f.Violations) > 0 {
			note = "mean breaks " + strings.Join(f.Violations, ", ")
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\n", mark, name, pm(MetricCost, "$"), pm(MetricP99Startup, "s"),
			pm(MetricDisruptionsPerNodeDay, ""), pm(MetricPodsNeverRan, "n"), note)
	}
	_ = tw.Flush()
}

func (r *Result) feasibleCount() int {
	n := 0
	for _, v := range r.Variants {
		if v.Feasible() {
			n++
		}
	}
	return n
}

func settingsText(ss []Setting) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.Knob + "=" + s.Value
	}
	return strings.Join(parts, " ")
}
