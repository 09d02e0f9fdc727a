package replay

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

// Backtest holds a replay of a recording under its own NodePools against
// what the recorded cluster did, minute by minute.
type Backtest struct {
	Trace     string    `json:"trace"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Decisions string    `json:"decisions"`
	Errors    Errors    `json:"errors"`
	// Recorded and Simulated are the two clusters each minute.
	Recorded  []Point `json:"recorded"`
	Simulated []Point `json:"simulated"`
	// Divergences are the minutes the two differed most in nodes, apart
	// from each other, largest first.
	Divergences []Divergence `json:"divergences"`
	Notes       []string     `json:"notes"`
}

// Point is a cluster at one minute of the recording.
type Point struct {
	Minute              int            `json:"minute"`
	Nodes               int            `json:"nodes"`
	NodesByPool         map[string]int `json:"nodesByPool"`
	NodesByCapacityType map[string]int `json:"nodesByCapacityType"`
	CostPerHour         float64        `json:"costPerHourUSD"`
	Pending             int            `json:"pending"`
}

// Errors are how far the simulation was from the recording.
type Errors struct {
	// NodeCountMAPE is the mean absolute percentage error of the node
	// count over the minutes the recorded cluster had nodes.
	NodeCountMAPE float64 `json:"nodeCountMAPE"`
	// NodeCountMAPEByPool and ByCapacityType break it down.
	NodeCountMAPEByPool         map[string]float64 `json:"nodeCountMAPEByPool"`
	NodeCountMAPEByCapacityType map[string]float64 `json:"nodeCountMAPEByCapacityType"`
	RecordedCostUSD             float64            `json:"recordedCostUSD"`
	SimulatedCostUSD            float64            `json:"simulatedCostUSD"`
	// CostError is (simulated − recorded) / recorded, in percent.
	CostError float64 `json:"costErrorPercent"`
	// Pending time (created → bound) of the pods created during the
	// recording, in seconds, and the simulated minus the recorded.
	RecordedPendingP50  float64 `json:"recordedPendingSecondsP50"`
	RecordedPendingP90  float64 `json:"recordedPendingSecondsP90"`
	SimulatedPendingP50 float64 `json:"simulatedPendingSecondsP50"`
	SimulatedPendingP90 float64 `json:"simulatedPendingSecondsP90"`
	PendingP50Diff      float64 `json:"pendingSecondsP50Difference"`
	PendingP90Diff      float64 `json:"pendingSecondsP90Difference"`
}

// Divergence is a minute the two clusters differed, and what each did in
// the ten minutes before it.
type Divergence struct {
	Minute    int       `json:"minute"`
	At        time.Time `json:"at"`
	Recorded  Point     `json:"recordedPoint"`
	Simulated Point     `json:"simulatedPoint"`
	Why       string    `json:"why"`
}

// Price is an offering's hourly price to a NodePool, false when the
// catalog has none.
type Price func(nodePool, instanceType, zone, capacityType string) (float64, bool)

// Prices prices offerings as a run offers them to each NodePool (its
// NodeOverlays' prices applied); an offering a NodePool is not offered
// takes the cheapest price of its type and capacity type to any.
func Prices(byPool map[string][]*cloudprovider.InstanceType) Price {
	type key struct{ pool, it, zone, ct string }
	m := map[key]float64{}
	byType := map[[2]string]float64{}
	for pool, its := range byPool {
		for _, it := range its {
			for _, o := range it.Offerings {
				m[key{pool, it.Name, o.Zone, o.CapacityType}] = o.Price
				if p, ok := byType[[2]string{it.Name, o.CapacityType}]; !ok || o.Price < p {
					byType[[2]string{it.Name, o.CapacityType}] = o.Price
				}
			}
		}
	}
	return func(pool, it, zone, ct string) (float64, bool) {
		if p, ok := m[key{pool, it, zone, ct}]; ok {
			return p, true
		}
		p, ok := byType[[2]string{it, ct}]
		return p, ok
	}
}

// divergenceWindow keeps the divergences reported apart, and is how far
// back their Why looks.
const divergenceWindow = 10

// NewBacktest compares the recording with rep, the simulator's replay of
// it under the recorded NodePools; price prices the recorded nodes as the
// simulated cloud priced its own.
func NewBacktest(name string, rec *Recording, rep *sim.Report, price Price, decisions string) *Backtest {
	bt := &Backtest{Trace: name, Start: rec.Start, End: rec.End, Decisions: decisions}
	minutes := int(rec.End.Sub(rec.Start) / time.Minute)
	unpriced := map[string]bool{}
	recNodes := make([]sim.NodeRecord, 0, len(rec.Nodes))
	var recCost float64
	for _, n := range rec.Nodes {
		p, ok := price(n.NodePool, n.InstanceType, n.Zone, n.CapacityType)
		if !ok {
			unpriced[n.InstanceType+"/"+n.CapacityType] = true
		}
		recNodes = append(recNodes, sim.NodeRecord{Name: n.Name, NodePool: n.NodePool, InstanceType: n.InstanceType, Zone: n.Zone, CapacityType: n.CapacityType,
			Launched: n.Created, Deleted: n.Deleted})
		from, to := maxTime(n.Created, rec.Start), rec.End
		if n.Deleted != nil && n.Deleted.Before(to) {
			to = *n.Deleted
		}
		if to.After(from) {
			recCost += p * to.Sub(from).Hours()
		}
	}
	for m := 0; m <= minutes; m++ {
		at := rec.Start.Add(time.Duration(m) * time.Minute)
		r := nodesAt(recNodes, at, m)
		for _, n := range recNodes {
			if alive(n, at) {
				p, _ := price(n.NodePool, n.InstanceType, n.Zone, n.CapacityType)
				r.CostPerHour += p
			}
		}
		r.CostPerHour = round4(r.CostPerHour)
		r.Pending = pendingAt(rec.Pods, at)
		bt.Recorded = append(bt.Recorded, r)
		s := nodesAt(rep.ByNode, at, m)
		if m < len(rep.Timeline) && rep.Timeline[m].Minute == m {
			s.CostPerHour, s.Pending = rep.Timeline[m].CostPerHour, rep.Timeline[m].Pending
		}
		bt.Simulated = append(bt.Simulated, s)
	}
	bt.Errors = bt.errors(rec, rep, recCost)
	bt.Divergences = bt.divergences(rec, rep)
	if len(unpriced) > 0 {
		bt.Notes = append(bt.Notes, fmt.Sprintf("recorded nodes of %d instance and capacity types the catalog does not price cost nothing here: %v", len(unpriced), slices.Sorted(maps.Keys(unpriced))))
	}
	bt.Notes = append(bt.Notes, rep.Notes...)
	return bt
}

func alive(n sim.NodeRecord, at time.Time) bool {
	return !n.Launched.After(at) && (n.Deleted == nil || n.Deleted.After(at))
}

func nodesAt(nodes []sim.NodeRecord, at time.Time, minute int) Point {
	p := Point{Minute: minute, NodesByPool: map[string]int{}, NodesByCapacityType: map[string]int{}}
	for _, n := range nodes {
		if alive(n, at) {
			p.Nodes++
			p.NodesByPool[n.NodePool]++
			p.NodesByCapacityType[n.CapacityType]++
		}
	}
	return p
}

func pendingAt(pods []PodLife, at time.Time) int {
	n := 0
	for _, p := range pods {
		if p.Created.After(at) {
			break // by creation
		}
		if (p.Bound == nil || p.Bound.After(at)) && (p.Gone == nil || p.Gone.After(at)) {
			n++
		}
	}
	return n
}

func (bt *Backtest) errors(rec *Recording, rep *sim.Report, recCost float64) Errors {
	e := Errors{RecordedCostUSD: round4(recCost), SimulatedCostUSD: round4(rep.Cost.Total),
		NodeCountMAPEByPool: map[string]float64{}, NodeCountMAPEByCapacityType: map[string]float64{}}
	e.NodeCountMAPE = mape(bt.Recorded, bt.Simulated, func(p Point) int { return p.Nodes })
	keys := func(by func(Point) map[string]int) []string {
		set := map[string]bool{}
		for _, ps := range [][]Point{bt.Recorded, bt.Simulated} {
			for _, p := range ps {
				for k := range by(p) {
					set[k] = true
				}
			}
		}
		return slices.Sorted(maps.Keys(set))
	}
	for _, pool := range keys(func(p Point) map[string]int { return p.NodesByPool }) {
		e.NodeCountMAPEByPool[pool] = mape(bt.Recorded, bt.Simulated, func(p Point) int { return p.NodesByPool[pool] })
	}
	for _, ct := range keys(func(p Point) map[string]int { return p.NodesByCapacityType }) {
		e.NodeCountMAPEByCapacityType[ct] = mape(bt.Recorded, bt.Simulated, func(p Point) int { return p.NodesByCapacityType[ct] })
	}
	if recCost > 0 {
		e.CostError = round4((rep.Cost.Total - recCost) / recCost * 100)
	}
	var waits []float64
	for _, p := range rec.Pods {
		if p.Bound != nil && !p.Created.Before(rec.Start) {
			waits = append(waits, p.Bound.Sub(p.Created).Seconds())
		}
	}
	sort.Float64s(waits)
	e.RecordedPendingP50, e.RecordedPendingP90 = quantile(waits, 0.5), quantile(waits, 0.9)
	if rep.Pods.StartupP50 != nil {
		e.SimulatedPendingP50, e.SimulatedPendingP90 = *rep.Pods.StartupP50, *rep.Pods.StartupP90
	}
	e.PendingP50Diff = round4(e.SimulatedPendingP50 - e.RecordedPendingP50)
	e.PendingP90Diff = round4(e.SimulatedPendingP90 - e.RecordedPendingP90)
	return e
}

// mape is the mean absolute percentage error of f over the minutes its
// recorded value is not zero (0 when there are none).
func mape(rec, simulated []Point, f func(Point) int) float64 {
	var sum float64
	n := 0
	for i := range rec {
		if r := f(rec[i]); r > 0 {
			sum += math.Abs(float64(f(simulated[i])-r)) / float64(r)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return round4(sum / float64(n) * 100)
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return round4(sorted[int(math.Ceil(q*float64(len(sorted))))-1])
}

// divergences are the minutes of the largest node-count differences, at
// least divergenceWindow minutes apart, up to five.
func (bt *Backtest) divergences(rec *Recording, rep *sim.Report) []Divergence {
	order := make([]int, len(bt.Recorded))
	for i := range order {
		order[i] = i
	}
	diff := func(i int) int { return abs(bt.Simulated[i].Nodes - bt.Recorded[i].Nodes) }
	sort.SliceStable(order, func(a, b int) bool { return diff(order[a]) > diff(order[b]) })
	var out []Divergence
	for _, i := range order {
		if diff(i) == 0 || len(out) == 5 {
			break
		}
		near := false
		for _, d := range out {
			if abs(d.Minute-i) < divergenceWindow {
				near = true
			}
		}
		if near {
			continue
		}
		at := rec.Start.Add(time.Duration(i) * time.Minute)
		out = append(out, Divergence{Minute: i, At: at, Recorded: bt.Recorded[i], Simulated: bt.Simulated[i], Why: why(rec, rep, at)})
	}
	return out
}

// why says what each cluster did in the divergenceWindow minutes up to at.
func why(rec *Recording, rep *sim.Report, at time.Time) string {
	from := at.Add(-divergenceWindow * time.Minute)
	in := func(t time.Time) bool { return t.After(from) && !t.After(at) }
	var recUp, recDown, simUp, simDown int
	for _, n := range rec.Nodes {
		if in(n.Created) {
			recUp++
		}
		if n.Deleted != nil && in(*n.Deleted) {
			recDown++
		}
	}
	reasons := map[string]int{}
	for _, n := range rep.ByNode {
		if in(n.Launched) {
			simUp++
		}
		if n.Deleted != nil && in(*n.Deleted) {
			simDown++
			reasons[n.DeletedReason]++
		}
	}
	arrived, left := 0, 0
	for _, p := range rec.Pods {
		if in(p.Created) {
			arrived++
		}
		if p.Gone != nil && in(*p.Gone) {
			left++
		}
	}
	s := fmt.Sprintf("in the %d minutes before, %d pods arrived and %d left; the recorded cluster launched %d nodes and deleted %d, the simulated one launched %d and deleted %d",
		divergenceWindow, arrived, left, recUp, recDown, simUp, simDown)
	if len(reasons) > 0 {
		s += " (" + joinCounts(reasons) + ")"
	}
	return s
}

func joinCounts(m map[string]int) string {
	s := ""
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			s += ", "
		}
		if k == "" {
			s += fmt.Sprintf("%d still running", m[k])
			continue
		}
		s += fmt.Sprintf("%d %s", m[k], k)
	}
	return s
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func round4(f float64) float64 { return math.Round(f*10000) / 10000 }

// WriteSummary prints the backtest's error figures and divergences.
func (bt *Backtest) WriteSummary(w io.Writer) {
	e := bt.Errors
	fmt.Fprintf(w, "backtest of %s: %s to %s (%s), decisions %s\n\n", bt.Trace, bt.Start.Format(time.RFC3339), bt.End.Format(time.RFC3339), bt.End.Sub(bt.Start), bt.Decisions)
	fmt.Fprintf(w, "node count   mean absolute error %.1f %%", e.NodeCountMAPE)
	if len(e.NodeCountMAPEByPool) > 1 || len(e.NodeCountMAPEByCapacityType) > 1 {
		fmt.Fprintf(w, " (by pool: %s; by capacity type: %s)", percents(e.NodeCountMAPEByPool), percents(e.NodeCountMAPEByCapacityType))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "cost         recorded $%.2f, simulated $%.2f: %+.1f %%\n", e.RecordedCostUSD, e.SimulatedCostUSD, e.CostError)
	fmt.Fprintf(w, "pending p50  recorded %.1f s, simulated %.1f s (%+.1f s)\n", e.RecordedPendingP50, e.SimulatedPendingP50, e.PendingP50Diff)
	fmt.Fprintf(w, "pending p90  recorded %.1f s, simulated %.1f s (%+.1f s)\n", e.RecordedPendingP90, e.SimulatedPendingP90, e.PendingP90Diff)
	if len(bt.Divergences) > 0 {
		fmt.Fprintln(w, "\nlargest divergences:")
		for _, d := range bt.Divergences {
			fmt.Fprintf(w, "  %s (+%dm): recorded %d nodes %s $%.2f/h, simulated %d nodes %s $%.2f/h; %s\n", d.At.Format("Mon 15:04"), d.Minute,
				d.Recorded.Nodes, counts(d.Recorded.NodesByPool), d.Recorded.CostPerHour, d.Simulated.Nodes, counts(d.Simulated.NodesByPool), d.Simulated.CostPerHour, d.Why)
		}
	}
	if len(bt.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range bt.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
}

func percents(m map[string]float64) string {
	s := ""
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %.1f %%", k, m[k])
	}
	return s
}

func counts(m map[string]int) string {
	s := "("
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", k, m[k])
	}
	return s + ")"
}
