package sim

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/autoscale"
	"github.com/joiner-autoscaler/joiner/pkg/report"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

type recorder struct {
	e           *simulation
	resizes     []*report.ResizeReport
	startups    []float64
	byWorkload  map[string][]float64
	created     int
	evictions   int
	disruptions map[[2]string]int
	blocked     int
	blockedBy   map[string]bool // nodes a budget held back
	// holds: what held each node back, by node and reason, for Blocked.
	holds       map[holdKey]*report.BlockedRecord
	interrupts  int
	repairs     report.Repairs
	preempted   report.Preemptions
	cloudErrors map[string]int
	launched    map[string]int
	neverReg    int
	tolViol     int
	scales      map[string]*report.Autoscaler
	timeline    []report.Sample
	notes       []string
	lastPass    time.Time
	drift       report.DriftBudget
	driftNodes  map[string]bool
	events      []report.DisruptionEvent
	loops       []*simPod               // pods given up on after a launch loop
	heldBack    map[string]bool         // drifted nodes a budget held back
	nodes       map[*simNode]*nodeTally // each node's pods and end
	staticHeld  map[string]bool         // static NodePools whose scale-down a budget holds
	// What the NodeOverlays did (nil without any).
	overlayResult *overlay.Result
	overlayByName map[string]*report.OverlayReport
	overlayList   []*report.OverlayReport
}

func newRecorder(e *simulation) *recorder {
	return &recorder{e: e, byWorkload: map[string][]float64{}, disruptions: map[[2]string]int{}, cloudErrors: map[string]int{}, launched: map[string]int{},
		scales: map[string]*report.Autoscaler{}, driftNodes: map[string]bool{}, heldBack: map[string]bool{}, blockedBy: map[string]bool{}, holds: map[holdKey]*report.BlockedRecord{}, nodes: map[*simNode]*nodeTally{},
		staticHeld: map[string]bool{}}
}

// workloadKey names a pod's controller as reports do: "Deployment/web",
// "CronJob/nightly", "Pod/debug".
func workloadKey(p *simPod) string {
	if w := p.owner; w != nil {
		if w.cron != "" {
			return "CronJob/" + w.cron
		}
		return w.kind + "/" + w.name
	}
	return "Pod/" + p.pod.Name
}

func (r *recorder) podCreated(p *simPod) {
	r.created++
	if k := workloadKey(p); r.byWorkload[k] == nil {
		r.byWorkload[k] = []float64{} // listed even if none of its pods runs
	}
}

func (r *recorder) podRunning(p *simPod) {
	d := p.running.Sub(p.created).Seconds()
	r.startups = append(r.startups, d)
	key := workloadKey(p)
	r.byWorkload[key] = append(r.byWorkload[key], d)
	if n := r.e.nodeOf(p); n != nil {
		taints := r.e.taints(n)
		if scheduling.ToleratesForScheduling(taints, p.pod.Spec.Tolerations) != nil {
			r.tolViol++
		}
		r.boundTo(n, key)
	}
}

func (r *recorder) barePodLost(p *simPod) {
	r.note("bare pod " + p.pod.Name + " was evicted and, having no controller, is gone")
}
func (r *recorder) evicted() { r.evictions++ }
func (r *recorder) cloudError(op, code string) {
	r.cloudErrors[op+"/"+code]++
}
func (r *recorder) nodeLaunched(n *simNode, _ string) {
	r.launched[n.pool.Name]++
	r.overlayLaunch(n)
}
func (r *recorder) nodeGone(n *simNode, reason string) {
	if reason == "Unregistered" {
		r.neverReg++
	}
	r.tally(n).gone = reason
	delete(r.driftNodes, n.name)
}
func (r *recorder) interruption(*simNode) { r.interrupts++ }
func (r *recorder) preemption(victims int) {
	r.preempted.Preemptors++
	r.preempted.Victims += victims
}
func (r *recorder) note(s string) {
	r.notes = append(r.notes, fmt.Sprintf("%s %s", r.e.clk.now.Format("Mon 15:04"), s))
}

func (r *recorder) scaled(w *workload, replicas int) {
	key := w.kind + "/" + w.name
	a, ok := r.scales[key]
	if !ok {
		a = &report.Autoscaler{Kind: w.kind, Name: w.name, Min: replicas, Max: replicas}
		r.scales[key] = a
	}
	a.Scales++
	a.Min, a.Max = min(a.Min, replicas), max(a.Max, replicas)
}

func (r *recorder) disrupted(n *simNode, reason string) {
	r.tally(n).disrupted = reason
	r.disruptions[[2]string{n.pool.Name, reason}]++
	r.events = append(r.events, report.DisruptionEvent{Minute: round(r.e.clk.now.Sub(r.e.start).Minutes()), NodePool: n.pool.Name, Node: n.name, Reason: reason})
	if reason == string(v1.DisruptionReasonDrifted) {
		r.driftNodes[n.name] = true
	}
}

// disruptionPass records budget blocks and checks drift against its budget.
func (r *recorder) disruptionPass(d *disruption.Decision) {
	for _, b := range d.Blocked {
		r.held(b.Node, b.Reason)
		if b.ByBudget != "" {
			r.blocked++
			r.blockedBy[b.Node] = true
		}
		if b.ByBudget == v1.DisruptionReasonDrifted {
			r.heldBack[b.Node] = true
			r.drift.HeldBackPassBlocks++
		}
	}
	perPool := map[string]int{}
	total := map[string]int{}
	for _, n := range r.e.nodes {
		if n.state == nodeReady || n.state == nodeDraining { // initialized, as budgets count
			total[n.pool.Name]++
		}
		if n.state != nodeGone && r.driftNodes[n.name] {
			perPool[n.pool.Name]++
		}
	}
	for _, np := range r.e.pools {
		c := perPool[np.Name]
		r.drift.MaxConcurrent = max(r.drift.MaxConcurrent, c)
		a := disruption.Allowed(np, v1.DisruptionReasonDrifted, disruption.PoolNodes{Total: total[np.Name]}, r.e.clk.now)
		if a.Binding >= 0 && c > a.Allowed {
			r.drift.Violations++
		}
	}
}

// staticScaling counts the surplus nodes of static NodePools that a
// budget holds as held back by it, and notes why when a hold begins.
func (r *recorder) staticScaling(ss []disruption.StaticScaling) {
	held := map[string]bool{}
	for _, s := range ss {
		if len(s.Held) == 0 {
			continue
		}
		held[s.NodePool.Name] = true
		for _, cand := range s.Held {
			r.blocked++
			r.blockedBy[cand.Node.Name] = true
			r.held(cand.Node.Name, disruption.BlockReason{Code: staticScaleDown, NodePool: s.NodePool.Name})
		}
		if !r.staticHeld[s.NodePool.Name] {
			r.note(s.String())
		}
	}
	r.staticHeld = held
}

// holdKey is one reason for one node: a record of Blocked.
type holdKey struct {
	node   string
	reason disruption.BlockReason
}

// staticScaleDown is the code of a static NodePool's surplus node its
// budget keeps (disruption's StaticScaling, not a pass's Blocked).
const staticScaleDown disruption.BlockCode = "StaticScaleDown"

// held counts one pass in which the reason held the node back; the
// reason is put in words once, when it first does.
func (r *recorder) held(node string, reason disruption.BlockReason) {
	at := round(r.e.clk.now.Sub(r.e.start).Minutes())
	k := holdKey{node, reason}
	h := r.holds[k]
	if h == nil {
		why := reason.String()
		if reason.Code == staticScaleDown {
			why = fmt.Sprintf("NodePool %s's budget keeps this surplus node of the static NodePool for a later pass", reason.NodePool)
		}
		h = &report.BlockedRecord{Node: node, Code: string(reason.Code), Why: why, First: at}
		if n := r.e.nodeByName(node); n != nil {
			h.NodePool = n.pool.Name
		}
		r.holds[k] = h
	}
	h.Passes++
	h.Last = at
}

// blockedRecords lists the holds by when they began, then node and reason.
func (r *recorder) blockedRecords() []report.BlockedRecord {
	out := make([]report.BlockedRecord, 0, len(r.holds))
	for _, h := range r.holds {
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b report.BlockedRecord) int {
		if c := cmp.Compare(a.First, b.First); c != 0 {
			return c
		}
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return strings.Compare(a.Why, b.Why)
	})
	return out
}

func (r *recorder) sample() {
	e := r.e
	s := report.Sample{Minute: int(e.clk.now.Sub(e.start).Minutes()), NodesByPool: map[string]int{}, NodesByCapacityType: map[string]int{}, Pending: len(e.pending)}
	for _, np := range e.pools {
		s.NodesByPool[np.Name] = 0
	}
	for _, n := range e.nodes {
		if n.state != nodeGone {
			s.NodesByPool[n.pool.Name]++
			s.NodesByCapacityType[n.offering.CapacityType]++
			s.CostPerHour += n.offering.Price
			if e.disrupting(n) {
				s.Disrupting++
			}
		}
	}
	s.CostPerHour = round(s.CostPerHour)
	for _, w := range e.workloads {
		if w.hpa != nil {
			if s.Replicas == nil {
				s.Replicas, s.Load = map[string]int{}, map[string]float64{}
			}
			s.Replicas[w.name] = w.replicas
			s.Load[w.name] = round(w.hpa.Load.At(e.clk.now.Sub(e.start)))
		}
	}
	r.timeline = append(r.timeline, s)
}

func round(f float64) float64 { return math.Round(f*10000) / 10000 }

// percentile of sorted values, rounded; nil when there are none.
func percentile(sorted []float64, p float64) *float64 {
	if len(sorted) == 0 {
		return nil
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	v := round(sorted[autoscale.Clamp(i, 0, len(sorted)-1)])
	return &v
}

// neverRanNames is how many pods of a NeverRan are named.
const neverRanNames = 5

func (e *simulation) finish() *report.Report {
	r := e.rep
	e.reservationNotes()
	rep := &report.Report{Scenario: e.in.Name, Start: e.start, End: e.end, Seed: e.in.Scenario.Spec.Seed, SpotPricesSynthetic: true,
		Cost: report.Cost{ByPool: map[string]float64{}}, CloudErrors: r.cloudErrors, Timeline: r.timeline, Notes: r.notes,
		BlockedByBudget: r.blocked, BlockedByBudgetNodes: len(r.blockedBy), DisruptionEvents: r.events, Blocked: r.blockedRecords(), DriftBudget: r.drift, SpotInterruptions: r.interrupts, Preemptions: r.preempted, Ignored: e.ignoredDocs()}
	rep.DriftBudget.HeldBackNodes = len(r.heldBack)
	if e.in.Scenario.Spec.Faults.NodeFailuresPerNodeHour > 0 {
		repairs := r.repairs
		rep.Repairs = &repairs
	}
	if r.overlayResult != nil {
		rep.NodeOverlays = r.overlayReports()
	}
	if rep.Notes == nil {
		rep.Notes = []string{}
	}
	for _, rz := range r.resizes {
		rep.Resizes = append(rep.Resizes, *rz)
	}
	if rep.Ignored == nil {
		rep.Ignored = []manifest.Ignored{}
	}
	peak := e.costs(rep)
	total := 0
	for _, c := range r.launched {
		total += c
	}
	rep.Nodes = report.NodeStats{Launched: total, LaunchedByPool: r.launched, PeakByPool: peak, NeverRegistered: r.neverReg, TolerationViolations: r.tolViol}
	rep.ByNode, rep.ByZone = r.nodeRecords()
	e.podStats(rep)
	e.neverRan(rep)
	rep.Buffers = e.bufferReport(rep)
	for k, c := range r.disruptions {
		rep.Disruptions = append(rep.Disruptions, report.Disruptions{NodePool: k[0], Reason: k[1], Count: c})
	}
	sort.Slice(rep.Disruptions, func(i, j int) bool {
		a, b := rep.Disruptions[i], rep.Disruptions[j]
		return a.NodePool+a.Reason < b.NodePool+b.Reason
	})
	for _, k := range slices.Sorted(maps.Keys(r.scales)) {
		rep.Autoscalers = append(rep.Autoscalers, *r.scales[k])
	}
	if rep.Disruptions == nil {
		rep.Disruptions = []report.Disruptions{}
	}
	rep.LaunchLoops = r.launchLoops()
	if rep.DisruptionEvents == nil {
		rep.DisruptionEvents = []report.DisruptionEvent{}
	}
	return rep
}

// costs fills the cost by NodePool and the node-hours by instance type,
// and returns each NodePool's peak node count.
func (e *simulation) costs(rep *report.Report) map[string]int {
	r := e.rep
	hours := map[[2]string]*report.NodeHours{}
	for _, np := range e.pools {
		rep.Cost.ByPool[np.Name] = 0
	}
	peak := map[string]int{}
	for _, s := range r.timeline {
		for p, n := range s.NodesByPool {
			peak[p] = max(peak[p], n)
		}
	}
	for _, n := range e.allNodes {
		for _, seg := range n.hoursAt(e.end) {
			h := seg.hours
			cost := h * seg.offering.Price
			rep.Cost.Total += cost
			rep.Cost.ByPool[n.pool.Name] += cost
			k := [2]string{n.it.Name, seg.offering.CapacityType}
			if hours[k] == nil {
				hours[k] = &report.NodeHours{InstanceType: k[0], CapacityType: k[1]}
			}
			hours[k].Hours += h
			hours[k].CostUSD += cost
		}
	}
	rep.Cost.Total = round(rep.Cost.Total)
	for p := range rep.Cost.ByPool {
		rep.Cost.ByPool[p] = round(rep.Cost.ByPool[p])
	}
	for _, nh := range hours {
		nh.Hours, nh.CostUSD = round(nh.Hours), round(nh.CostUSD)
		rep.NodeHours = append(rep.NodeHours, *nh)
	}
	sort.Slice(rep.NodeHours, func(i, j int) bool {
		a, b := rep.NodeHours[i], rep.NodeHours[j]
		if a.CostUSD != b.CostUSD {
			return a.CostUSD > b.CostUSD
		}
		return a.InstanceType+a.CapacityType < b.InstanceType+b.CapacityType
	})
	return peak
}

// podStats fills the pods' startup latency: percentiles, per workload and
// the histogram.
func (e *simulation) podStats(rep *report.Report) {
	r := e.rep
	st := append([]float64(nil), r.startups...)
	sort.Float64s(st)
	rep.Pods = report.PodStats{Created: r.created + len(e.bare), Ran: len(st), Evictions: r.evictions,
		StartupP50: percentile(st, 0.5), StartupP90: percentile(st, 0.9), StartupP99: percentile(st, 0.99), StartupMax: percentile(st, 1)}
	rep.Pods.ByWorkload = map[string]report.Startup{}
	for _, p := range e.bare {
		if k := workloadKey(p); r.byWorkload[k] == nil {
			r.byWorkload[k] = []float64{}
		}
	}
	for k, v := range r.byWorkload {
		v = append([]float64(nil), v...)
		sort.Float64s(v)
		rep.Pods.ByWorkload[k] = report.Startup{Ran: len(v), P50: percentile(v, 0.5), P90: percentile(v, 0.9), Max: percentile(v, 1)}
	}
	for _, upTo := range []float64{1, 5, 15, 30, 60, 120, 300, 600, math.Inf(1)} {
		n := sort.SearchFloat64s(st, math.Nextafter(upTo, math.Inf(1)))
		if math.IsInf(upTo, 1) {
			upTo = -1 // "more": JSON has no infinity
		}
		rep.Pods.Histogram = append(rep.Pods.Histogram, report.Bucket{UpTo: upTo, Count: n})
	}
}

// neverRan fills the pods still pending at the end, by reason and by
// workload.
func (e *simulation) neverRan(rep *report.Report) {
	reasons := map[string]int{}
	never := map[[2]string]*report.NeverRan{}
	pending, byPod := e.pendingPods() // oldest first, then by name
	for _, pp := range pending {
		p := byPod[pp]
		reason := p.reason
		if reason == "" {
			reason = "still waiting for a node at the end of the run"
		}
		reasons[reason]++
		rep.Pods.NeverRan++
		k := [2]string{workloadKey(p), reason}
		if never[k] == nil {
			never[k] = &report.NeverRan{Workload: k[0], Reason: reason}
		}
		never[k].Pods++
		never[k].Names = append(never[k].Names, p.pod.Namespace+"/"+p.pod.Name)
	}
	if len(reasons) > 0 {
		rep.Pods.NeverRanReason = reasons
	}
	for _, n := range never {
		n.Names = n.Names[:min(len(n.Names), neverRanNames)]
		rep.Pods.NeverRanPods = append(rep.Pods.NeverRanPods, *n)
	}
	sort.Slice(rep.Pods.NeverRanPods, func(i, j int) bool {
		a, b := rep.Pods.NeverRanPods[i], rep.Pods.NeverRanPods[j]
		if a.Workload != b.Workload {
			return a.Workload < b.Workload
		}
		return a.Reason < b.Reason
	})
}
