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

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Report is the outcome of a run. Its JSON is deterministic: the same
// scenario and seed give the same bytes.
type Report struct {
	Scenario string    `json:"scenario"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Seed     int64     `json:"seed"`
	// SpotPricesSynthetic: the catalog's spot prices are not real data.
	SpotPricesSynthetic bool          `json:"spotPricesSynthetic"`
	Cost                Cost          `json:"cost"`
	NodeHours           []NodeHours   `json:"nodeHours"`
	Nodes               NodeStats     `json:"nodes"`
	ByNode              []NodeRecord  `json:"byNode"`
	ByZone              []ZoneStats   `json:"byZone"`
	Pods                PodStats      `json:"pods"`
	Disruptions         []Disruptions `json:"disruptions"`
	// BlockedByBudget counts the passes × nodes a budget held back (a
	// static NodePool's surplus waiting for its budget among them);
	// BlockedByBudgetNodes the distinct nodes.
	BlockedByBudget      int               `json:"blockedByBudget"`
	BlockedByBudgetNodes int               `json:"blockedByBudgetNodes"`
	DriftBudget          DriftBudget       `json:"driftBudget"`
	SpotInterruptions    int               `json:"spotInterruptions"`
	Preemptions          Preemptions       `json:"preemptions"`
	CloudErrors          map[string]int    `json:"cloudErrors"`
	Autoscalers          []Autoscaler      `json:"autoscalers"`
	Timeline             []Sample          `json:"timeline"`
	DisruptionEvents     []DisruptionEvent `json:"disruptionEvents"`
	Notes                []string          `json:"notes"`
	// LaunchLoops are pods nodes were launched for again and again that
	// never bound to them: a finding, not a cost to simulate.
	LaunchLoops []LaunchLoop `json:"launchLoops"`
	// Ignored are the input's objects of kinds the simulator does not
	// model, each with its file, line and what leaving it out means.
	Ignored []manifest.Ignored `json:"ignored"`
	// Repairs, in a run with node failures, counts them and node repair's
	// replacements.
	Repairs *Repairs `json:"repairs,omitempty"`
	// Resizes, in a scenario with resize events, says what each did to
	// its pods.
	Resizes []ResizeReport `json:"resizes,omitempty"`
	// NodeOverlays, in a scenario with any, says what each did.
	NodeOverlays []OverlayReport `json:"nodeOverlays,omitempty"`
	// Buffers, in a scenario with CapacityBuffers, says what they held,
	// cost and saved.
	Buffers *BufferReport `json:"buffers,omitempty"`
	// Blocked says what held nodes back from disruption: one record per
	// node and reason, over the passes that reason held it.
	Blocked []BlockedRecord `json:"blocked,omitempty"`
}

// BlockedRecord is one reason one node was held back from disruption:
// its code (disruption.BlockCode, or StaticScaleDown for a static
// NodePool's surplus its budget keeps), the reason in words, and the
// passes it held the node, from the first to the last (minutes from the
// start).
type BlockedRecord struct {
	Node     string  `json:"node"`
	NodePool string  `json:"nodePool"`
	Code     string  `json:"code"`
	Why      string  `json:"why"`
	Passes   int     `json:"passes"`
	First    float64 `json:"firstMinute"`
	Last     float64 `json:"lastMinute"`
}

// Cost in USD.
type Cost struct {
	Total  float64            `json:"totalUSD"`
	ByPool map[string]float64 `json:"byPoolUSD"`
}

// NodeHours by instance and capacity type.
type NodeHours struct {
	InstanceType string  `json:"instanceType"`
	CapacityType string  `json:"capacityType"`
	Hours        float64 `json:"hours"`
	CostUSD      float64 `json:"costUSD"`
}

// NodeStats counts nodes.
type NodeStats struct {
	Launched        int            `json:"launched"`
	LaunchedByPool  map[string]int `json:"launchedByPool"`
	PeakByPool      map[string]int `json:"peakByPool"`
	NeverRegistered int            `json:"neverRegistered"`
	// TolerationViolations counts pods bound to nodes whose taints they do
	// not tolerate (must be 0).
	TolerationViolations int `json:"tolerationViolations"`
}

// NodeRecord is one node over its life: Report.ByNode lists every node the
// run launched, by launch time and name.
type NodeRecord struct {
	Name         string `json:"name"`
	NodePool     string `json:"nodePool"`
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	CapacityType string `json:"capacityType"`
	// Reservation is the capacity reservation it launched into, if any.
	Reservation string    `json:"reservation,omitempty"`
	Launched    time.Time `json:"launched"`
	// Deleted is null for a node still running at the end of the run.
	// DeletedReason is the disruption reason it went for (Drifted, Empty,
	// Underutilized, Expired, Interrupted, Unhealthy), else Unregistered or Abandoned
	// (a replacement its command gave up on).
	Deleted       *time.Time `json:"deleted"`
	DeletedReason string     `json:"deletedReason,omitempty"`
	// Failed is when its kubelet stopped reporting (a node failure fault;
	// Unhealthy as DeletedReason: node repair replaced it).
	Failed *time.Time `json:"failed,omitempty"`
	// PodsRan counts the pods bound to the node over its life, PeakPods
	// the most at once (DaemonSet pods not counted in either).
	PodsRan  int `json:"podsRan"`
	PeakPods int `json:"peakPods"`
	// PodsByWorkload counts the pods that ran on it by their workload
	// (namespace/name of the Deployment, Job, … or the bare pod).
	PodsByWorkload map[string]int `json:"podsByWorkload,omitempty"`
}

// ZoneStats counts what ran in one zone over the run, so topology spread
// can be checked: Report.ByZone has every zone the NodePools could use.
type ZoneStats struct {
	Zone           string         `json:"zone"`
	Launched       int            `json:"launched"`
	LaunchedByPool map[string]int `json:"launchedByPool"`
	// PodsRan counts pods bound to the zone's nodes over the run (each
	// bind once; DaemonSet pods not counted), also per workload.
	PodsRan           int            `json:"podsRan"`
	PodsRanByWorkload map[string]int `json:"podsRanByWorkload"`
}

// PodStats are pod outcomes and startup latency (pending → running). The
// percentiles are absent when no pod ran.
type PodStats struct {
	Created        int            `json:"created"`
	Ran            int            `json:"ran"`
	NeverRan       int            `json:"neverRan"`
	NeverRanReason map[string]int `json:"neverRanReasons,omitempty"`
	// NeverRanPods are the pods that never ran by workload and reason.
	NeverRanPods []NeverRan `json:"neverRanPods,omitempty"`
	Evictions    int        `json:"evictions"`
	StartupP50   *float64   `json:"startupSecondsP50,omitempty"`
	StartupP90   *float64   `json:"startupSecondsP90,omitempty"`
	StartupP99   *float64   `json:"startupSecondsP99,omitempty"`
	StartupMax   *float64   `json:"startupSecondsMax,omitempty"`
	Histogram    []Bucket   `json:"startupHistogram"`
	// ByWorkload breaks startup down by controller ("Deployment/web",
	// "CronJob/nightly", "Pod/debug"), so placeholder pods and batch jobs
	// do not hide how fast a service's pods start. A workload that
	// created pods of which none ran is listed with Ran 0.
	ByWorkload map[string]Startup `json:"byWorkload"`
}

// NeverRan is one workload's pods that never ran for one reason: how many,
// and the first few by name.
type NeverRan struct {
	Workload string   `json:"workload"`
	Reason   string   `json:"reason"`
	Pods     int      `json:"pods"`
	Names    []string `json:"names"`
}

// Startup is one workload's pod startup latency, pending → running; the
// percentiles are absent when none of its pods ran.
type Startup struct {
	Ran int      `json:"ran"`
	P50 *float64 `json:"startupSecondsP50,omitempty"`
	P90 *float64 `json:"startupSecondsP90,omitempty"`
	Max *float64 `json:"startupSecondsMax,omitempty"`
}

// Bucket of the startup histogram: pods that started within UpTo seconds.
type Bucket struct {
	UpTo  float64 `json:"upToSeconds"`
	Count int     `json:"count"`
}

// Disruptions counts nodes disrupted per pool and reason.
type Disruptions struct {
	NodePool string `json:"nodePool"`
	Reason   string `json:"reason"`
	Count    int    `json:"count"`
}

// DisruptionEvent is one node disrupted, at a minute of the run.
type DisruptionEvent struct {
	Minute   float64 `json:"minute"`
	NodePool string  `json:"nodePool"`
	Node     string  `json:"node"`
	Reason   string  `json:"reason"`
}

// Preemptions counts pods that preempted others, and the pods they evicted.
type Preemptions struct {
	Preemptors int `json:"preemptors"`
	Victims    int `json:"victims"`
}

// DriftBudget checks drift against its budget at every pass.
type DriftBudget struct {
	MaxConcurrent int `json:"maxConcurrentDrifted"`
	Violations    int `json:"violations"`
	// HeldBackNodes counts the distinct drifted nodes a Drifted budget held
	// back at least once; HeldBackPassBlocks every pass that did so, per node.
	HeldBackNodes      int `json:"heldBackNodes"`
	HeldBackPassBlocks int `json:"heldBackPassBlocks"`
}

// Autoscaler is an HPA or ScaledObject's range over the run.
type Autoscaler struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Min    int    `json:"minReplicas"`
	Max    int    `json:"maxReplicas"`
	Scales int    `json:"scaleEvents"`
}

// Sample is the cluster each minute.
type Sample struct {
	Minute      int            `json:"minute"`
	NodesByPool map[string]int `json:"nodesByPool"`
	// NodesByCapacityType counts the same nodes by the capacity type they
	// run as now (on-demand, spot, reserved).
	NodesByCapacityType map[string]int     `json:"nodesByCapacityType"`
	CostPerHour         float64            `json:"costPerHourUSD"`
	Pending             int                `json:"pending"`
	Replicas            map[string]int     `json:"replicas,omitempty"`
	Load                map[string]float64 `json:"load,omitempty"`
	Disrupting          int                `json:"disrupting"`
}

type recorder struct {
	e           *simulation
	resizes     []*ResizeReport
	startups    []float64
	byWorkload  map[string][]float64
	created     int
	evictions   int
	disruptions map[[2]string]int
	blocked     int
	blockedBy   map[string]bool // nodes a budget held back
	// holds: what held each node back, by node and reason, for Blocked.
	holds       map[holdKey]*BlockedRecord
	interrupts  int
	repairs     Repairs
	preempted   Preemptions
	cloudErrors map[string]int
	launched    map[string]int
	neverReg    int
	tolViol     int
	scales      map[string]*Autoscaler
	timeline    []Sample
	notes       []string
	lastPass    time.Time
	drift       DriftBudget
	driftNodes  map[string]bool
	events      []DisruptionEvent
	loops       []*simPod               // pods given up on after a launch loop
	heldBack    map[string]bool         // drifted nodes a budget held back
	nodes       map[*simNode]*nodeTally // each node's pods and end
	staticHeld  map[string]bool         // static NodePools whose scale-down a budget holds
	// What the NodeOverlays did (nil without any).
	overlayResult *overlay.Result
	overlayByName map[string]*OverlayReport
	overlayList   []*OverlayReport
}

func newRecorder(e *simulation) *recorder {
	return &recorder{e: e, byWorkload: map[string][]float64{}, disruptions: map[[2]string]int{}, cloudErrors: map[string]int{}, launched: map[string]int{},
		scales: map[string]*Autoscaler{}, driftNodes: map[string]bool{}, heldBack: map[string]bool{}, blockedBy: map[string]bool{}, holds: map[holdKey]*BlockedRecord{}, nodes: map[*simNode]*nodeTally{},
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
	if n := p.node; n != nil {
		taints := n.taints
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
		a = &Autoscaler{Kind: w.kind, Name: w.name, Min: replicas, Max: replicas}
		r.scales[key] = a
	}
	a.Scales++
	a.Min, a.Max = min(a.Min, replicas), max(a.Max, replicas)
}

func (r *recorder) disrupted(n *simNode, reason string) {
	r.tally(n).disrupted = reason
	r.disruptions[[2]string{n.pool.Name, reason}]++
	r.events = append(r.events, DisruptionEvent{Minute: round(r.e.clk.now.Sub(r.e.start).Minutes()), NodePool: n.pool.Name, Node: n.name, Reason: reason})
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
		h = &BlockedRecord{Node: node, Code: string(reason.Code), Why: why, First: at}
		if n := r.e.nodeByName(node); n != nil {
			h.NodePool = n.pool.Name
		}
		r.holds[k] = h
	}
	h.Passes++
	h.Last = at
}

// blockedRecords lists the holds by when they began, then node and reason.
func (r *recorder) blockedRecords() []BlockedRecord {
	out := make([]BlockedRecord, 0, len(r.holds))
	for _, h := range r.holds {
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b BlockedRecord) int {
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
	s := Sample{Minute: int(e.clk.now.Sub(e.start).Minutes()), NodesByPool: map[string]int{}, NodesByCapacityType: map[string]int{}, Pending: len(e.pending)}
	for _, np := range e.pools {
		s.NodesByPool[np.Name] = 0
	}
	for _, n := range e.nodes {
		if n.state != nodeGone {
			s.NodesByPool[n.pool.Name]++
			s.NodesByCapacityType[n.offering.CapacityType]++
			s.CostPerHour += n.offering.Price
			if n.disrupting {
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
			s.Load[w.name] = round(w.hpa.load.at(e.clk.now.Sub(e.start)))
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
	v := round(sorted[clamp(i, 0, len(sorted)-1)])
	return &v
}

// neverRanNames is how many pods of a NeverRan are named.
const neverRanNames = 5

func (e *simulation) finish() *Report {
	r := e.rep
	e.reservationNotes()
	rep := &Report{Scenario: e.in.Name, Start: e.start, End: e.end, Seed: e.in.Scenario.Spec.Seed, SpotPricesSynthetic: true,
		Cost: Cost{ByPool: map[string]float64{}}, CloudErrors: r.cloudErrors, Timeline: r.timeline, Notes: r.notes,
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
	rep.Nodes = NodeStats{Launched: total, LaunchedByPool: r.launched, PeakByPool: peak, NeverRegistered: r.neverReg, TolerationViolations: r.tolViol}
	rep.ByNode, rep.ByZone = r.nodeRecords()
	e.podStats(rep)
	e.neverRan(rep)
	rep.Buffers = e.bufferReport(rep)
	for k, c := range r.disruptions {
		rep.Disruptions = append(rep.Disruptions, Disruptions{NodePool: k[0], Reason: k[1], Count: c})
	}
	sort.Slice(rep.Disruptions, func(i, j int) bool {
		a, b := rep.Disruptions[i], rep.Disruptions[j]
		return a.NodePool+a.Reason < b.NodePool+b.Reason
	})
	for _, k := range slices.Sorted(maps.Keys(r.scales)) {
		rep.Autoscalers = append(rep.Autoscalers, *r.scales[k])
	}
	if rep.Disruptions == nil {
		rep.Disruptions = []Disruptions{}
	}
	rep.LaunchLoops = r.launchLoops()
	if rep.DisruptionEvents == nil {
		rep.DisruptionEvents = []DisruptionEvent{}
	}
	return rep
}

// costs fills the cost by NodePool and the node-hours by instance type,
// and returns each NodePool's peak node count.
func (e *simulation) costs(rep *Report) map[string]int {
	r := e.rep
	hours := map[[2]string]*NodeHours{}
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
				hours[k] = &NodeHours{InstanceType: k[0], CapacityType: k[1]}
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
func (e *simulation) podStats(rep *Report) {
	r := e.rep
	st := append([]float64(nil), r.startups...)
	sort.Float64s(st)
	rep.Pods = PodStats{Created: r.created + len(e.bare), Ran: len(st), Evictions: r.evictions,
		StartupP50: percentile(st, 0.5), StartupP90: percentile(st, 0.9), StartupP99: percentile(st, 0.99), StartupMax: percentile(st, 1)}
	rep.Pods.ByWorkload = map[string]Startup{}
	for _, p := range e.bare {
		if k := workloadKey(p); r.byWorkload[k] == nil {
			r.byWorkload[k] = []float64{}
		}
	}
	for k, v := range r.byWorkload {
		v = append([]float64(nil), v...)
		sort.Float64s(v)
		rep.Pods.ByWorkload[k] = Startup{Ran: len(v), P50: percentile(v, 0.5), P90: percentile(v, 0.9), Max: percentile(v, 1)}
	}
	for _, upTo := range []float64{1, 5, 15, 30, 60, 120, 300, 600, math.Inf(1)} {
		n := sort.SearchFloat64s(st, math.Nextafter(upTo, math.Inf(1)))
		if math.IsInf(upTo, 1) {
			upTo = -1 // "more": JSON has no infinity
		}
		rep.Pods.Histogram = append(rep.Pods.Histogram, Bucket{UpTo: upTo, Count: n})
	}
}

// neverRan fills the pods still pending at the end, by reason and by
// workload.
func (e *simulation) neverRan(rep *Report) {
	reasons := map[string]int{}
	never := map[[2]string]*NeverRan{}
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
			never[k] = &NeverRan{Workload: k[0], Reason: reason}
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
