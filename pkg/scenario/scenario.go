// Package scenario is what the simulator runs: a scenario directory's
// scenario.yaml (when, how long, what load, which faults — the Scenario
// type) and the manifests beside it (NodePools, node classes, workloads,
// autoscalers, storage), loaded, defaulted as the API server would and
// checked, into an Input. It knows nothing of how a run goes (pkg/sim).
package scenario

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	simcloud "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/schedulerconfig"
)

// scenarioFields is the fix for an unknown field of scenario.yaml.
const scenarioFields = "the fields of spec: start, duration, seed, region, zones, catalog, loads, jobs, events, faults, consolidationSpotToSpot, kubeScheduler, schedulerConfig, capacityReservations"

// ScenarioAPIVersion and ScenarioKind identify scenario.yaml.
const (
	ScenarioAPIVersion = "joiner.dev/v1alpha1"
	ScenarioKind       = "Scenario"
)

// Scenario is what manifests cannot say: when, how long, what load, which faults.
type Scenario struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       ScenarioSpec      `json:"spec"`
}

// ScenarioSpec is the body of scenario.yaml.
type ScenarioSpec struct {
	// Start is when the run begins (UTC), so budget windows fall on real weekdays.
	Start time.Time `json:"start"`
	// Duration of the run, e.g. 24h or 168h.
	Duration metav1.Duration `json:"duration"`
	Seed     int64           `json:"seed"`
	Region   string          `json:"region,omitempty"`
	Zones    []string        `json:"zones,omitempty"`
	// Catalog is an instance-type catalog file; empty uses the embedded one.
	Catalog string `json:"catalog,omitempty"`
	// Loads drive HPAs and ScaledObjects.
	Loads []LoadSpec `json:"loads,omitempty"`
	// Jobs says how long the pods of a Job (or of a CronJob's Jobs) run.
	Jobs []JobRuntime `json:"jobs,omitempty"`
	// Events change the cluster during the run (a new AMI, …).
	Events []Event `json:"events,omitempty"`
	Faults Faults  `json:"faults,omitempty"`
	// ConsolidationSpotToSpot enables spot-to-spot consolidation.
	ConsolidationSpotToSpot bool `json:"consolidationSpotToSpot,omitempty"`
	// KubeScheduler is how fast the cluster's kube-scheduler works
	// through pending pods; unset, it tries every pod at once.
	KubeScheduler *KubeScheduler `json:"kubeScheduler,omitempty"`
	// SchedulerConfig is the cluster's kube-scheduler configuration, as
	// the controller's --scheduler-config: its default topology spread
	// constraints apply to pods that declare none, in provisioning,
	// consolidation and the kube-scheduler model.
	SchedulerConfig *schedulerconfig.Config `json:"schedulerConfig,omitempty"`
	// CapacityReservations are the account's EC2 capacity reservations
	// (what DescribeCapacityReservations would return); an EC2NodeClass's
	// capacityReservationSelectorTerms select among them.
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
}

// CapacityReservation is one EC2 capacity reservation: an On-Demand
// Capacity Reservation (type default, interruptible or not) or a Capacity
// Block, for count instances of one type in one zone.
type CapacityReservation struct {
	ID           string `json:"id"`
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	Count        int    `json:"count"`
	// Type is default (an ODCR, the default) or capacity-block.
	Type          string `json:"type,omitempty"`
	Interruptible bool   `json:"interruptible,omitempty"`
	// OwnerID is the owning account (12 digits); the default is
	// 123456789012.
	OwnerID string `json:"ownerID,omitempty"`
	// InstanceMatchCriteria is open or targeted (the default).
	InstanceMatchCriteria string            `json:"instanceMatchCriteria,omitempty"`
	Tags                  map[string]string `json:"tags,omitempty"`
	// End is when the reservation ends, as an offset from the run's
	// start; unset: it does not end. A Capacity Block needs one.
	End *metav1.Duration `json:"end,omitempty"`
}

// DefaultReservationOwner is a reservation's owner when a scenario names none.
const DefaultReservationOwner = "123456789012"

// Reservations are the scenario's capacity reservations as the simulated
// cloud holds them, their ends made times.
func (s *ScenarioSpec) Reservations() []simcloud.Reservation {
	out := make([]simcloud.Reservation, len(s.CapacityReservations))
	for i, r := range s.CapacityReservations {
		out[i] = simcloud.Reservation{ID: r.ID, InstanceType: r.InstanceType, Zone: r.Zone, Count: r.Count, Type: r.Type,
			Interruptible: r.Interruptible, OwnerID: r.OwnerID, InstanceMatchCriteria: r.InstanceMatchCriteria, Tags: r.Tags}
		if out[i].Type == "" {
			out[i].Type = cloudprovider.ReservationTypeDefault
		}
		if out[i].OwnerID == "" {
			out[i].OwnerID = DefaultReservationOwner
		}
		if out[i].InstanceMatchCriteria == "" {
			out[i].InstanceMatchCriteria = "targeted"
		}
		if r.End != nil {
			out[i].End = s.Start.UTC().Add(r.End.Duration)
		}
	}
	return out
}

// LoadSpec is the demand on one autoscaled workload over time.
type LoadSpec struct {
	Target LoadTarget `json:"target"`
	// Pattern: constant, steps, diurnal or csv.
	Pattern string `json:"pattern"`
	// Value for constant; Base and Peak (at PeakHour UTC) for diurnal.
	Value    float64 `json:"value,omitempty"`
	Base     float64 `json:"base,omitempty"`
	Peak     float64 `json:"peak,omitempty"`
	PeakHour float64 `json:"peakHour,omitempty"`
	Steps    []Step  `json:"steps,omitempty"`
	// CSV is a file of "offset,value" lines (offset as a duration from start).
	CSV string `json:"csv,omitempty"`
	// CPUPerUnit is the CPU one unit of load uses, spread over the ready
	// replicas: it gives an HPA its utilization metric.
	CPUPerUnit *resource.Quantity `json:"cpuPerUnit,omitempty"`
}

// LoadTarget names an HPA or a ScaledObject.
type LoadTarget struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// Step is a value from an offset on.
type Step struct {
	At    metav1.Duration `json:"at"`
	Value float64         `json:"value"`
}

// JobRuntime says how long a Job's pods run once started.
type JobRuntime struct {
	Name      string          `json:"name"`
	Namespace string          `json:"namespace,omitempty"`
	Duration  metav1.Duration `json:"duration"`
}

// Event changes the cluster at an offset.
type Event struct {
	At metav1.Duration `json:"at"`
	// NodeClassAMI changes the image an EC2NodeClass selects: nodes launched
	// before drift.
	NodeClassAMI *NodeClassAMI `json:"nodeClassAMI,omitempty"`
	// Resize changes a workload's container requests, and its pods' in
	// place as the kubelet resizes them (InPlacePodVerticalScaling).
	Resize *Resize `json:"resize,omitempty"`
	// ReservationInterruption: the owner of an interruptible capacity
	// reservation (spec.capacityReservations) takes it back — its nodes
	// get EC2's two-minute warning, and nothing launches into it again.
	ReservationInterruption *ReservationInterruption `json:"reservationInterruption,omitempty"`
}

// ReservationInterruption names the interruptible reservation reclaimed.
type ReservationInterruption struct {
	ID string `json:"id"`
}

// Resize is an in-place resize of a Deployment's or StatefulSet's pods:
// its template takes the new requests (pods made from now on have them),
// and each live pod is resized — a pending one at once; a running one at
// once when its node has room, else deferred until it has (the kubelet's
// PodResizePending Deferred), or never when the node is too small for it
// (Infeasible). Meanwhile the pod counts at the larger of old and new, as
// kube-scheduler and upstream Karpenter count it.
type Resize struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Container names the container to resize; it may be left out when
	// the pods have one.
	Container string              `json:"container,omitempty"`
	Requests  corev1.ResourceList `json:"requests"`
}

// NodeClassAMI is a new amiSelectorTerms alias for a node class.
type NodeClassAMI struct {
	Name  string `json:"name"`
	Alias string `json:"alias"`
}

// Faults the simulated cloud injects.
type Faults struct {
	// SpotInterruptionsPerNodeHour is the rate of interruption notices.
	SpotInterruptionsPerNodeHour float64 `json:"spotInterruptionsPerNodeHour,omitempty"`
	// InsufficientCapacity windows make named offerings unavailable.
	InsufficientCapacity []CapacityWindow `json:"insufficientCapacity,omitempty"`
	// APIErrorRate is the share of launch calls that fail outright.
	APIErrorRate float64 `json:"apiErrorRate,omitempty"`
	// LaunchLatency: API call to instance running; RegistrationLatency:
	// running to Node registered; InitializationLatency: registered to ready.
	LaunchLatency         Latency `json:"launchLatency,omitempty"`
	RegistrationLatency   Latency `json:"registrationLatency,omitempty"`
	InitializationLatency Latency `json:"initializationLatency,omitempty"`
	// NeverRegisterRate is the share of instances whose Node never appears.
	NeverRegisterRate float64 `json:"neverRegisterRate,omitempty"`
	// NodeFailuresPerNodeHour is the rate at which a ready node fails: its
	// kubelet stops reporting (Ready Unknown), its pods are evicted five
	// minutes later as the node lifecycle controller evicts them, and node
	// repair replaces it once the cloud provider's toleration (30 minutes)
	// has passed — unless more than 20 % of its NodePool is unhealthy.
	NodeFailuresPerNodeHour float64 `json:"nodeFailuresPerNodeHour,omitempty"`
}

// KubeScheduler paces the simulated kube-scheduler.
type KubeScheduler struct {
	// PodsPerSecond: it tries at most that many pending pods a second —
	// binds one, or marks it unschedulable, the verdict provisioning waits
	// for — in the order they came. A busy kube-scheduler works through a
	// large scale-out over a minute or more, and the autoscaler sees its
	// pods in batches, not at once. 0 (or unset): no limit.
	PodsPerSecond float64 `json:"podsPerSecond,omitempty"`
}

// Boot is the simulated EC2's model of how instances come up, as these
// faults set it.
func (f Faults) Boot() simcloud.BootModel {
	lat := func(l Latency) simcloud.Latency {
		return simcloud.Latency{Mean: l.Mean.Duration, Stddev: l.Stddev.Duration}
	}
	return simcloud.BootModel{Launch: lat(f.LaunchLatency), Registration: lat(f.RegistrationLatency),
		Initialization: lat(f.InitializationLatency), NeverRegisterRate: f.NeverRegisterRate}
}

// CapacityWindows are the insufficient-capacity windows as the simulated
// EC2 takes them.
func (f Faults) CapacityWindows() []simcloud.CapacityWindow {
	out := make([]simcloud.CapacityWindow, len(f.InsufficientCapacity))
	for i, w := range f.InsufficientCapacity {
		out[i] = simcloud.CapacityWindow{InstanceType: w.InstanceType, Zone: w.Zone, CapacityType: w.CapacityType, From: w.From.Duration, To: w.To.Duration}
	}
	return out
}

// CapacityWindow: an offering unavailable from From to To (offsets).
type CapacityWindow struct {
	InstanceType string          `json:"instanceType"`
	Zone         string          `json:"zone,omitempty"`
	CapacityType string          `json:"capacityType,omitempty"`
	From         metav1.Duration `json:"from"`
	To           metav1.Duration `json:"to"`
}

// Latency is a normal distribution, truncated at Min.
type Latency struct {
	Mean   metav1.Duration `json:"mean,omitempty"`
	Stddev metav1.Duration `json:"stddev,omitempty"`
}

// DefaultScenario is what a scenario directory without scenario.yaml runs:
// one day from DefaultStart, seed 1, no load patterns or faults.
func DefaultScenario() Scenario {
	var s Scenario
	s.APIVersion, s.Kind = ScenarioAPIVersion, ScenarioKind
	s.Spec.Start = DefaultStart
	s.Spec.Duration = metav1.Duration{Duration: 24 * time.Hour}
	s.Spec.Seed = 1
	return s
}

// IsScenarioDocument reports whether d is meant as the scenario: anything of
// the joiner.dev group or of kind Scenario, and whatever scenario.yaml holds
// that is not a Kubernetes or Karpenter kind.
func IsScenarioDocument(d *manifest.Document) bool {
	group, _, _ := strings.Cut(d.APIVersion, "/")
	if !strings.Contains(d.APIVersion, "/") {
		group = ""
	}
	if group == "joiner.dev" || strings.HasSuffix(group, ".joiner.dev") || d.Kind == ScenarioKind {
		return true
	}
	return path.Base(d.File) == "scenario.yaml" && !manifest.IsKarpenter(d) && !manifest.IsBuiltin(d)
}

// CheckScenario decodes and checks a scenario document as Load does.
func CheckScenario(d *manifest.Document) error {
	_, err := decodeScenario(d, DefaultScenario())
	return err
}

// decodeScenario reads d over base (the defaults a scenario.yaml may leave
// out) and checks it: the apiVersion and kind, unknown fields, malformed
// values and the rules of validate, each named with file, line and fix.
func decodeScenario(d *manifest.Document, base Scenario) (Scenario, error) {
	if d.APIVersion != ScenarioAPIVersion || d.Kind != ScenarioKind {
		field := "apiVersion"
		if d.APIVersion == ScenarioAPIVersion {
			field = "kind"
		}
		return base, manifest.Problems{{File: d.File, Line: d.LineOf(field), Doc: d.Doc, Kind: d.Kind, Name: d.Name, Field: field,
			Message: fmt.Sprintf("a scenario is apiVersion %s, kind %s; this is %q %q", ScenarioAPIVersion, ScenarioKind, d.APIVersion, d.Kind),
			Fix:     fmt.Sprintf("apiVersion: %s\nkind: %s", ScenarioAPIVersion, ScenarioKind)}}
	}
	s := base
	if ps := manifest.DecodeStrictFields(d, &s, scenarioFields); len(ps) > 0 {
		return base, ps
	}
	if ps := s.validate(d); len(ps) > 0 {
		return base, ps
	}
	return s, nil
}

// validate names the field, its line and the fix for every bad value.
func (s *Scenario) validate(d *manifest.Document) manifest.Problems {
	var ps manifest.Problems
	bad := func(field, msg string) {
		ps = append(ps, manifest.Problem{File: d.File, Line: d.LineOf(field), Doc: d.Doc, Kind: d.Kind, Name: d.Name, Field: field, Message: msg})
	}
	if s.Spec.Start.IsZero() {
		bad("spec.start", `required: an RFC 3339 time such as "2026-11-30T00:00:00Z"`)
	}
	if s.Spec.Duration.Duration <= 0 {
		bad("spec.duration", "required: a positive duration such as 24h")
	}
	s.validateLoads(bad)
	if err := s.Spec.SchedulerConfig.Validate(); err != nil {
		bad("spec.schedulerConfig", err.Error())
	}
	s.validateEvents(bad)
	s.validateReservations(bad)
	s.validateFaults(bad)
	return ps
}

// validateLoads checks spec.loads.
func (s *Scenario) validateLoads(bad func(field, msg string)) {
	for i, l := range s.Spec.Loads {
		at := fmt.Sprintf("spec.loads[%d]", i)
		switch l.Target.Kind {
		case "HorizontalPodAutoscaler", "ScaledObject":
		default:
			bad(at+".target.kind", fmt.Sprintf("%q: use HorizontalPodAutoscaler or ScaledObject", l.Target.Kind))
		}
		switch l.Pattern {
		case "constant", "diurnal":
		case "steps":
			if len(l.Steps) == 0 {
				bad(at+".steps", "a steps pattern needs at least one {at, value}")
			}
		case "csv":
			if l.CSV == "" {
				bad(at+".csv", "a csv pattern needs a file of offset,value lines")
			}
		default:
			bad(at+".pattern", fmt.Sprintf("%q: use constant, steps, diurnal or csv", l.Pattern))
		}
		if l.Target.Kind == "HorizontalPodAutoscaler" && l.CPUPerUnit == nil {
			bad(at+".cpuPerUnit", "an HPA load needs the CPU one unit of load uses, e.g. cpuPerUnit: 5m")
		}
	}
}

// validateEvents checks spec.events.
func (s *Scenario) validateEvents(bad func(field, msg string)) {
	for i, ev := range s.Spec.Events {
		at := fmt.Sprintf("spec.events[%d]", i)
		if n := btoi(ev.NodeClassAMI != nil) + btoi(ev.Resize != nil) + btoi(ev.ReservationInterruption != nil); n != 1 {
			bad(at, "an event does one thing: give exactly one of nodeClassAMI, resize and reservationInterruption")
		}
		if ri := ev.ReservationInterruption; ri != nil && !s.interruptible(ri.ID) {
			bad(at+".reservationInterruption.id", fmt.Sprintf("%q is no interruptible reservation of spec.capacityReservations: only an On-Demand Capacity Reservation with interruptible: true can be taken back", ri.ID))
		}
		if ev.At.Duration < 0 || ev.At.Duration >= s.Spec.Duration.Duration {
			bad(at+".at", fmt.Sprintf("%s is outside the run: use an offset from its start, from 0s to under spec.duration (%s)", ev.At.Duration, s.Spec.Duration.Duration))
		}
		if r := ev.Resize; r != nil {
			switch {
			case r.Kind != "Deployment" && r.Kind != "StatefulSet":
				bad(at+".resize.kind", fmt.Sprintf("%q: resize a Deployment's or a StatefulSet's pods", r.Kind))
			case r.Name == "":
				bad(at+".resize.name", "required: the workload whose pods are resized")
			case len(r.Requests) == 0:
				bad(at+".resize.requests", "required: the new requests, e.g. {cpu: 750m, memory: 1Gi}")
			}
		}
	}
}

// validateFaults checks spec.faults.
func (s *Scenario) validateFaults(bad func(field, msg string)) {
	f := s.Spec.Faults
	for _, r := range []struct {
		name string
		v    float64
	}{{"spec.faults.apiErrorRate", f.APIErrorRate}, {"spec.faults.neverRegisterRate", f.NeverRegisterRate}} {
		if r.v < 0 || r.v > 1 {
			bad(r.name, fmt.Sprintf("%v is not a share: use a number from 0 to 1", r.v))
		}
	}
	if f.SpotInterruptionsPerNodeHour < 0 {
		bad("spec.faults.spotInterruptionsPerNodeHour", "must not be negative")
	}
	if k := s.Spec.KubeScheduler; k != nil && k.PodsPerSecond < 0 {
		bad("spec.kubeScheduler.podsPerSecond", fmt.Sprintf("%v: a rate of pods a second, 0 or more (0: no limit)", k.PodsPerSecond))
	}
	if r := f.NodeFailuresPerNodeHour; r < 0 || r > 1 {
		bad("spec.faults.nodeFailuresPerNodeHour", fmt.Sprintf("%v: a rate per node-hour from 0 to 1, e.g. 0.001 (one failure in a thousand node-hours)", r))
	}
}

var (
	reservationIDRE    = regexp.MustCompile(`^cr-[0-9a-z]+$`)
	reservationOwnerRE = regexp.MustCompile(`^[0-9]{12}$`)
)

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// interruptible says spec.capacityReservations has an interruptible
// reservation of that ID.
func (s *Scenario) interruptible(id string) bool {
	for _, r := range s.Spec.CapacityReservations {
		if r.ID == id {
			return r.Interruptible
		}
	}
	return false
}

// validateReservations checks spec.capacityReservations as EC2 and
// upstream's EC2NodeClass status would have them.
func (s *Scenario) validateReservations(bad func(field, msg string)) {
	seen := map[string]bool{}
	for i, r := range s.Spec.CapacityReservations {
		at := fmt.Sprintf("spec.capacityReservations[%d]", i)
		switch {
		case !reservationIDRE.MatchString(r.ID):
			bad(at+".id", fmt.Sprintf("%q: a reservation id is cr- and lower-case letters and digits, e.g. cr-0123456789abcdef0", r.ID))
		case seen[r.ID]:
			bad(at+".id", fmt.Sprintf("%s is declared twice: one entry per reservation", r.ID))
		}
		seen[r.ID] = true
		if r.InstanceType == "" {
			bad(at+".instanceType", "required: the instance type reserved, e.g. m7i.2xlarge")
		}
		if r.Zone == "" {
			bad(at+".zone", "required: the zone reserved in, e.g. us-east-1a")
		}
		if r.Count <= 0 {
			bad(at+".count", fmt.Sprintf("%d: the number of instances reserved, at least 1", r.Count))
		}
		switch r.Type {
		case "", cloudprovider.ReservationTypeDefault:
		case cloudprovider.ReservationTypeCapacityBlock:
			if r.End == nil {
				bad(at+".end", "a Capacity Block ends: give its end as an offset from the run's start, e.g. 6h")
			}
			if r.Interruptible {
				bad(at+".interruptible", "a Capacity Block is never interruptible: only an On-Demand Capacity Reservation (type default) is")
			}
		default:
			bad(at+".type", fmt.Sprintf("%q: use default (an On-Demand Capacity Reservation) or capacity-block", r.Type))
		}
		if r.OwnerID != "" && !reservationOwnerRE.MatchString(r.OwnerID) {
			bad(at+".ownerID", fmt.Sprintf("%q: an AWS account id is 12 digits", r.OwnerID))
		}
		switch r.InstanceMatchCriteria {
		case "", "open", "targeted":
		default:
			bad(at+".instanceMatchCriteria", fmt.Sprintf("%q: use open or targeted", r.InstanceMatchCriteria))
		}
		if r.End != nil && (r.End.Duration <= 0) {
			bad(at+".end", fmt.Sprintf("%s: an offset after the run's start, e.g. 6h", r.End.Duration))
		}
	}
}

// decodeLoose decodes JSON into v, ignoring fields v does not model.
func decodeLoose(obj map[string]any, v any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
