package replay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// Backtest holds a replay of a recording under its own NodePools against
// what the recorded cluster did, minute by minute.
type Backtest struct {
	Trace     string    `json:"trace"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Decisions string    `json:"decisions"`
	// Step is how often, in seconds, the two clusters are compared.
	Step   float64 `json:"stepSeconds"`
	Errors Errors  `json:"errors"`
	// Recorded and Simulated are the two clusters every Step.
	Recorded  []Point `json:"recorded"`
	Simulated []Point `json:"simulated"`
	// Divergences are the minutes the two differed most in nodes, apart
	// from each other, largest first.
	Divergences []Divergence `json:"divergences"`
	Notes       []string     `json:"notes"`
}

// Point is a cluster at one moment of the recording.
type Point struct {
	// Seconds from the recording's start.
	Seconds             int            `json:"seconds"`
	Nodes               int            `json:"nodes"`
	NodesByPool         map[string]int `json:"nodesByPool"`
	NodesByCapacityType map[string]int `json:"nodesByCapacityType"`
	CostPerHour         float64        `json:"costPerHourUSD"`
	Pending             int            `json:"pending"`
}

// Errors are how far the simulation was from the recording.
type Errors struct {
	// NodeCountMAPE is the mean absolute percentage error of the node
	// count over the moments compared at which the recorded cluster had
	// nodes.
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

// Divergence is a moment the two clusters differed, and what each did in
// the ten minutes before it.
type Divergence struct {
	Seconds   int       `json:"seconds"`
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
const divergenceWindow = 10 * time.Minute

// RunBacktest replays rec (read from the trace name) under its own
// NodePools with opts (its Policy: whose decisions), records the replay as
// `joiner record` would have recorded it, and holds the two recordings
// against each other (NewBacktest). fsys and dir hold what the run's
// scenario names (a catalog).
func RunBacktest(ctx context.Context, name string, rec *Recording, fsys fs.FS, dir string, opts sim.Options) (*Backtest, error) {
	in, err := rec.Input(name, nil)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, trace.Header{Started: rec.Start, Server: "the replay of " + name})
	if err != nil {
		return nil, err
	}
	opts.Trace = w
	rep, err := sim.Run(ctx, in, fsys, dir, opts)
	if err != nil {
		return nil, err
	}
	if err := w.Close(rep.End); err != nil {
		return nil, err
	}
	r, err := trace.NewReader(&buf, "the replay of "+name)
	if err != nil {
		return nil, err
	}
	replayed, err := Read(r)
	if err != nil {
		return nil, err
	}
	offered, err := sim.Offerings(in, fsys, dir, opts.Policy)
	if err != nil {
		return nil, err
	}
	decisions := opts.Policy.Decisions
	if decisions == "" {
		decisions = provisioning.DecisionsJoiner
	}
	return NewBacktest(name, rec, replayed, rep, Prices(offered), string(decisions)), nil
}

// Step is how often a backtest compares the two clusters: every minute,
// or every 10 seconds for a recording shorter than two hours (a
// time-compressed run).
func Step(length time.Duration) time.Duration {
	if length < 2*time.Hour {
		return 10 * time.Second
	}
	return time.Minute
}

// NewBacktest compares the recording with replayed, the recording of the
// simulator's replay of it (rep its report): both are measured the same
// way, their nodes priced by price.
func NewBacktest(name string, rec, replayed *Recording, rep *report.Report, price Price, decisions string) *Backtest {
	step := Step(rec.End.Sub(rec.Start))
	bt := &Backtest{Trace: name, Start: rec.Start, End: rec.End, Decisions: decisions, Step: step.Seconds()}
	unpriced := map[string]bool{}
	recCost, simCost := cost(rec, price, unpriced), cost(replayed, price, unpriced)
	bt.Recorded, bt.Simulated = series(rec, price, step), series(replayed, price, step)
	if n := min(len(bt.Recorded), len(bt.Simulated)); n < len(bt.Recorded) || n < len(bt.Simulated) {
		bt.Recorded, bt.Simulated = bt.Recorded[:n], bt.Simulated[:n] // a replay that ended early (cut short) compares as far as it got
	}
	bt.Errors = bt.errors(rec, replayed, recCost, simCost)
	bt.Divergences = bt.divergences(rec, replayed, rep)
	if len(unpriced) > 0 {
		bt.Notes = append(bt.Notes, fmt.Sprintf("nodes of %d instance and capacity types the catalog does not price cost nothing here: %v", len(unpriced), slices.Sorted(maps.Keys(unpriced))))
	}
	bt.Notes = append(bt.Notes, rep.Notes...)
	return bt
}

// cost is what a recording's nodes cost over it, launch to deletion.
func cost(rec *Recording, price Price, unpriced map[string]bool) float64 {
	var total float64
	for _, n := range rec.Nodes {
		p, ok := price(n.NodePool, n.InstanceType, n.Zone, n.CapacityType)
		if !ok {
			unpriced[n.InstanceType+"/"+n.CapacityType] = true
		}
		from, to := maxTime(n.Created, rec.Start), rec.End
		if n.Deleted != nil && n.Deleted.Before(to) {
			to = *n.Deleted
		}
		if to.After(from) {
			total += p * to.Sub(from).Hours()
		}
	}
	return total
}

// change is a node or a pending pod coming (+1) or going (-1).
type change struct {
	at    time.Time
	delta int
	node  *NodeLife // nil for a pod
}

// series is a recording's cluster every step from its start to its end:
// one sweep over its nodes' and pods' changes in time order. A node
// counts from its launch to its deletion (at its deletion it is gone); a
// pod is pending from its creation until it is bound or gone.
func series(rec *Recording, price Price, step time.Duration) []Point {
	var cs []change
	for i := range rec.Nodes {
		n := &rec.Nodes[i]
		cs = append(cs, change{at: n.Created, delta: 1, node: n})
		if n.Deleted != nil {
			cs = append(cs, change{at: *n.Deleted, delta: -1, node: n})
		}
	}
	for _, p := range rec.Pods {
		end := p.Bound
		if p.Gone != nil && (end == nil || p.Gone.Before(*end)) {
			end = p.Gone
		}
		if end != nil && !end.After(p.Created) {
			continue // never waited
		}
		cs = append(cs, change{at: p.Created, delta: 1})
		if end != nil {
			cs = append(cs, change{at: *end, delta: -1})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].at.Before(cs[j].at) })
	byPool, byCT := map[string]int{}, map[string]int{}
	nodes, pending := 0, 0
	var costPerHour float64
	var out []Point
	i := 0
	for at := rec.Start; !at.After(rec.End); at = at.Add(step) {
		for ; i < len(cs) && !cs[i].at.After(at); i++ {
			c := cs[i]
			if c.node == nil {
				pending += c.delta
				continue
			}
			nodes += c.delta
			byPool[c.node.NodePool] += c.delta
			byCT[c.node.CapacityType] += c.delta
			p, _ := price(c.node.NodePool, c.node.InstanceType, c.node.Zone, c.node.CapacityType)
			costPerHour += float64(c.delta) * p
		}
		out = append(out, Point{Seconds: int(at.Sub(rec.Start).Seconds()), Nodes: nodes, NodesByPool: positive(byPool), NodesByCapacityType: positive(byCT),
			CostPerHour: round4(max(costPerHour, 0)), Pending: pending})
	}
	return out
}

// positive is a copy of counts without the zeros.
func positive(counts map[string]int) map[string]int {
	out := make(map[string]int, len(counts))
	for k, v := range counts {
		if v > 0 {
			out[k] = v
		}
	}
	return out
}

func (bt *Backtest) errors(rec, replayed *Recording, recCost, simCost float64) Errors {
	e := Errors{RecordedCostUSD: round4(recCost), SimulatedCostUSD: round4(simCost),
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
		e.CostError = round4((simCost - recCost) / recCost * 100)
	}
	e.RecordedPendingP50, e.RecordedPendingP90 = waits(rec)
	e.SimulatedPendingP50, e.SimulatedPendingP90 = waits(replayed)
	e.PendingP50Diff = round4(e.SimulatedPendingP50 - e.RecordedPendingP50)
	e.PendingP90Diff = round4(e.SimulatedPendingP90 - e.RecordedPendingP90)
	return e
}

// waits are the p50 and p90 of how long the pods created during a
// recording waited to be bound.
func waits(rec *Recording) (p50, p90 float64) {
	var ws []float64
	for _, p := range rec.Pods {
		if p.Bound != nil && !p.Created.Before(rec.Start) {
			ws = append(ws, p.Bound.Sub(p.Created).Seconds())
		}
	}
	sort.Float64s(ws)
	return quantile(ws, 0.5), quantile(ws, 0.9)
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

// divergences are the moments of the largest node-count differences, at
// least divergenceWindow apart, up to five.
func (bt *Backtest) divergences(rec, replayed *Recording, rep *report.Report) []Divergence {
	order := make([]int, len(bt.Recorded))
	for i := range order {
		order[i] = i
	}
	diff := func(i int) int { return abs(bt.Simulated[i].Nodes - bt.Recorded[i].Nodes) }
	sort.SliceStable(order, func(a, b int) bool { return diff(order[a]) > diff(order[b]) })
	reasons := map[string]string{}
	for _, n := range rep.ByNode {
		reasons[n.Name] = n.DeletedReason
	}
	var out []Divergence
	for _, i := range order {
		if diff(i) == 0 || len(out) == 5 {
			break
		}
		at := rec.Start.Add(time.Duration(bt.Recorded[i].Seconds) * time.Second)
		near := false
		for _, d := range out {
			if d.At.Sub(at) < divergenceWindow && at.Sub(d.At) < divergenceWindow {
				near = true
			}
		}
		if near {
			continue
		}
		out = append(out, Divergence{Seconds: bt.Recorded[i].Seconds, At: at, Recorded: bt.Recorded[i], Simulated: bt.Simulated[i], Why: why(rec, replayed, reasons, at)})
	}
	return out
}

// why says what each cluster did in the divergenceWindow up to at.
func why(rec, replayed *Recording, reasons map[string]string, at time.Time) string {
	from := at.Add(-divergenceWindow)
	in := func(t time.Time) bool { return t.After(from) && !t.After(at) }
	changes := func(r *Recording) (up, down int, why map[string]int) {
		why = map[string]int{}
		for _, n := range r.Nodes {
			if in(n.Created) {
				up++
			}
			if n.Deleted != nil && in(*n.Deleted) {
				down++
				if reasons != nil {
					why[reasons[n.Name]]++
				}
			}
		}
		return up, down, why
	}
	recUp, recDown, _ := changes(rec)
	simUp, simDown, simWhy := changes(replayed)
	arrived, left := 0, 0
	for _, p := range rec.Pods {
		if in(p.Created) {
			arrived++
		}
		if p.Gone != nil && in(*p.Gone) {
			left++
		}
	}
	s := fmt.Sprintf("in the %s before, %d pods arrived and %d left; the recorded cluster launched %d nodes and deleted %d, the simulated one launched %d and deleted %d",
		divergenceWindow, arrived, left, recUp, recDown, simUp, simDown)
	if len(simWhy) > 0 {
		s += " (" + joinCounts(simWhy) + ")"
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
	fmt.Fprintf(w, "backtest of %s: %s to %s (%s), decisions %s\n\n", bt.Trace, bt.Start.Format(time.RFC3339), bt.End.Format(time.RFC3339), bt.End.Sub(bt.Start).Round(time.Second), bt.Decisions)
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
			fmt.Fprintf(w, "  %s (+%s): recorded %d nodes %s $%.2f/h, simulated %d nodes %s $%.2f/h; %s\n", d.At.Format("Mon 15:04:05"), time.Duration(d.Seconds)*time.Second,
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

// joinSorted is m's entries by key, each as f writes it, comma-separated.
func joinSorted[V any](m map[string]V, f func(k string, v V) string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, f(k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// joinCounts: "3 Empty, 1 Underutilized" ("" is a node still running).
func joinCounts(m map[string]int) string {
	return joinSorted(m, func(k string, n int) string {
		if k == "" {
			return fmt.Sprintf("%d still running", n)
		}
		return fmt.Sprintf("%d %s", n, k)
	})
}

// percents: "general 4.4 %, gpu 0.0 %".
func percents(m map[string]float64) string {
	return joinSorted(m, func(k string, v float64) string { return fmt.Sprintf("%s %.1f %%", k, v) })
}

// counts: "(general 3, spot 2)".
func counts(m map[string]int) string {
	return "(" + joinSorted(m, func(k string, n int) string { return fmt.Sprintf("%s %d", k, n) }) + ")"
}
