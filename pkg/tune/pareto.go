package tune

import (
	"encoding/json"
	"math"
	"sort"

	"github.com/joiner-autoscaler/joiner/pkg/report"
)

// Metrics are what a variant is judged by, all minimised.
type Metrics struct {
	CostUSD float64 `json:"costUSD"`
	// P99StartupSeconds is +Inf (null in JSON) when no pod ran.
	P99StartupSeconds     float64 `json:"-"`
	DisruptionsPerNodeDay float64 `json:"disruptionsPerNodeDay"`
	PodsNeverRan          float64 `json:"podsNeverRan"`
}

type metricsJSON struct {
	CostUSD               float64  `json:"costUSD"`
	P99StartupSeconds     *float64 `json:"p99StartupSeconds"`
	DisruptionsPerNodeDay float64  `json:"disruptionsPerNodeDay"`
	PodsNeverRan          float64  `json:"podsNeverRan"`
}

// MarshalJSON writes an infinite p99 as null.
func (m Metrics) MarshalJSON() ([]byte, error) {
	j := metricsJSON{CostUSD: m.CostUSD, DisruptionsPerNodeDay: m.DisruptionsPerNodeDay, PodsNeverRan: m.PodsNeverRan}
	if !math.IsInf(m.P99StartupSeconds, 0) {
		j.P99StartupSeconds = &m.P99StartupSeconds
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	var j metricsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Metrics{CostUSD: j.CostUSD, P99StartupSeconds: math.Inf(1), DisruptionsPerNodeDay: j.DisruptionsPerNodeDay, PodsNeverRan: j.PodsNeverRan}
	if j.P99StartupSeconds != nil {
		m.P99StartupSeconds = *j.P99StartupSeconds
	}
	return nil
}

// Get returns the named metric.
func (m Metrics) Get(name string) float64 {
	switch name {
	case MetricCost:
		return m.CostUSD
	case MetricP99Startup:
		return m.P99StartupSeconds
	case MetricDisruptionsPerNodeDay:
		return m.DisruptionsPerNodeDay
	case MetricPodsNeverRan:
		return m.PodsNeverRan
	}
	panic("unknown metric " + name)
}

// MetricsOf reads a run's report: disruptions per node-day are every
// disruption (consolidation, drift, expiry, interruption) over the node-days
// the run paid for.
func MetricsOf(r *report.Report) Metrics {
	m := Metrics{CostUSD: round(r.Cost.Total, 1e4), P99StartupSeconds: math.Inf(1), PodsNeverRan: float64(r.Pods.NeverRan)}
	if r.Pods.StartupP99 != nil {
		m.P99StartupSeconds = round(*r.Pods.StartupP99, 1e3)
	}
	var hours float64
	for _, h := range r.NodeHours {
		hours += h.Hours
	}
	var n int
	for _, d := range r.Disruptions {
		n += d.Count
	}
	if hours > 0 {
		m.DisruptionsPerNodeDay = round(float64(n)/(hours/24), 1e4)
	}
	return m
}

// round keeps JSON short and free of float noise.
func round(v, scale float64) float64 { return math.Round(v*scale) / scale }

// Dominates reports whether a is no worse than b in every objective and
// better in one.
func Dominates(a, b Metrics, objectives []string) bool {
	better := false
	for _, o := range objectives {
		x, y := a.Get(o), b.Get(o)
		if x > y {
			return false
		}
		if x < y {
			better = true
		}
	}
	return better
}

// Front returns the indexes of the points no other point dominates, in
// index order. Equal points are all on the front.
func Front(points []Metrics, objectives []string) []int {
	var out []int
	for i, p := range points {
		dominated := false
		for j, q := range points {
			if i != j && Dominates(q, p, objectives) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, i)
		}
	}
	return out
}

// ranks is non-dominated sorting: 0 for the front, 1 for the front of the
// rest, and so on.
func ranks(points []Metrics, objectives []string) []int {
	r := make([]int, len(points))
	left := make([]int, len(points))
	for i := range left {
		left[i] = i
	}
	for level := 0; len(left) > 0; level++ {
		sub := make([]Metrics, len(left))
		for i, k := range left {
			sub[i] = points[k]
		}
		front := Front(sub, objectives)
		on := map[int]bool{}
		for _, f := range front {
			r[left[f]] = level
			on[f] = true
		}
		var rest []int
		for i, k := range left {
			if !on[i] {
				rest = append(rest, k)
			}
		}
		left = rest
	}
	return r
}

// violations are the constraints m breaks.
func violations(m Metrics, cs []Constraint) []string {
	var out []string
	for _, c := range cs {
		if m.Get(c.Metric) > c.max {
			out = append(out, c.Metric)
		}
	}
	return out
}

// lexLess orders by the objectives in turn, then by index.
func lexLess(a, b Metrics, ai, bi int, objectives []string) bool {
	for _, o := range objectives {
		if x, y := a.Get(o), b.Get(o); x != y {
			return x < y
		}
	}
	return ai < bi
}

// best orders candidates for successive halving: those meeting the
// constraints first (then fewest broken), by Pareto rank, then the
// objectives in order.
func best(ms []Metrics, cs []Constraint, objectives []string) []int {
	rk := ranks(ms, objectives)
	idx := make([]int, len(ms))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(x, y int) bool {
		a, b := idx[x], idx[y]
		va, vb := len(violations(ms[a], cs)), len(violations(ms[b], cs))
		if va != vb {
			return va < vb
		}
		if rk[a] != rk[b] {
			return rk[a] < rk[b]
		}
		return lexLess(ms[a], ms[b], a, b, objectives)
	})
	return idx
}
