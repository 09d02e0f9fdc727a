package report

import (
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
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
