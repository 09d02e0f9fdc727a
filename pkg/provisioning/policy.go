package provisioning

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
)

// Policy is every operator setting that changes what the engine decides:
// whose choices to make where Joiner and upstream Karpenter differ (which
// also says how NodeOverlays merge), and upstream's minValues policy. Each
// host — the controller, the simulator, plan and explain — parses one from
// its flags (ParsePolicy) and hands the same value to everything it runs;
// nothing else switches on the mode. The zero Policy is the default:
// Joiner's decisions, Strict minValues.
type Policy struct {
	Decisions Decisions
	MinValues MinValuesPolicy
	// ModelDRA plans pods that ask for devices through Dynamic Resource
	// Allocation (upstream's --ignore-dra-requests=false). The zero value
	// is upstream's default, --ignore-dra-requests=true: such a pod gets
	// no NodeClaim and no place (ReasonDRA), and a node running one is not
	// consolidated or drifted, for its pod would not reschedule.
	ModelDRA bool
}

// The flags a Policy is read from.
const (
	FlagDecisions = "decisions"
	FlagMinValues = "min-values-policy"
)

// FlagError is a bad value of one of the Policy's flags.
type FlagError struct {
	Flag string // FlagDecisions or FlagMinValues
	Err  error
}

func (e *FlagError) Error() string { return "--" + e.Flag + ": " + e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// ParsePolicy reads the --decisions and --min-values-policy flags' values
// ("" is each one's default); a bad value is a *FlagError.
func ParsePolicy(decisions, minValues string) (Policy, error) {
	d, err := ParseDecisions(decisions)
	if err != nil {
		return Policy{}, &FlagError{Flag: FlagDecisions, Err: err}
	}
	m, err := ParseMinValuesPolicy(minValues)
	if err != nil {
		return Policy{}, &FlagError{Flag: FlagMinValues, Err: err}
	}
	return Policy{Decisions: d, MinValues: m}, nil
}

// OverheadDaemonSets are the DaemonSet pods a new node's overhead counts
// under the policy: as upstream's, those that ask for devices through DRA
// are left out while DRA is not modelled (their pods could not run there
// anyway). ds itself when none is left out.
func (p Policy) OverheadDaemonSets(ds []*corev1.Pod) []*corev1.Pod {
	if p.ModelDRA || !slices.ContainsFunc(ds, podutil.HasDRARequirements) {
		return ds
	}
	out := make([]*corev1.Pod, 0, len(ds))
	for _, d := range ds {
		if !podutil.HasDRARequirements(d) {
			out = append(out, d)
		}
	}
	return out
}

// Karpenter is true when the policy makes upstream's choices.
func (p Policy) Karpenter() bool { return p.Decisions == DecisionsKarpenter }

// LaunchCohorts is true when the Nodes one provisioning pass launches
// together are opened to kube-scheduler together (Joiner's decisions; see
// state.AnnotationLaunchCohort). Upstream Karpenter registers each Node
// as it comes.
func (p Policy) LaunchCohorts() bool { return !p.Karpenter() }

// WaitsForBinding is true when a host that watches kube-scheduler bind
// launches no node only for pods awaiting a launch while kube-scheduler
// is still binding pods (Joiner's decisions; see state.Store.Unawaited):
// the pods it has yet to bind may find room it has not used yet. Upstream
// Karpenter plans every pass for every pending pod.
func (p Policy) WaitsForBinding() bool { return !p.Karpenter() }

// MarksLeaving is true when a disruption pass whose consolidation the
// budgets cut short names the nodes later rounds would take, for hosts to
// mark them (Joiner's decisions; see disruption.ConsolidatingTaint).
// Upstream Karpenter leaves kube-scheduler to place evicted pods on any
// node.
func (p Policy) MarksLeaving() bool { return !p.Karpenter() }

// KeepsMovedPodsOffSettling is true when the pods a consolidation moves
// may not land on a settling node — one inside its NodePool's
// consolidateAfter since its last pod event — as upstream Karpenter's
// since v1.14 (kubernetes-sigs/karpenter#3006; #3225 reports it sharply
// cutting multi-node consolidation). Upstream's decisions only: the rule keeps the nodes a round filled from being
// emptied into at once, but after a scale-in every node left took the
// last round's pods, so each round with a budget of one waits a
// consolidateAfter for its destinations to settle. Joiner's decisions
// keep moved pods off the nodes later rounds take by marking those
// (MarksLeaving) and let them land anywhere else.
func (p Policy) KeepsMovedPodsOffSettling() bool { return p.Karpenter() }

// BatchesSingleNode is true when single-node consolidation may take, in
// one pass, several nodes the budgets allow, each command checked with the
// others already carried out (Joiner's decisions; see disruption's
// singleNode). Upstream Karpenter takes one a pass, and after a scale-in
// right-sizes the nodes left half full one after the other, a validation
// (15 s) and more each.
func (p Policy) BatchesSingleNode() bool { return !p.Karpenter() }

// ProvisionsSchedulerBacklog is true when a pod kube-scheduler has not
// tried within a few seconds of its creation is provisioned for as if it
// had found no room (Joiner's decisions; see state.Store's
// SetSchedulerBacklog). Upstream Karpenter waits for kube-scheduler's
// verdict on every pod.
func (p Policy) ProvisionsSchedulerBacklog() bool { return !p.Karpenter() }

// PinsLaunchedPods is true when a pending pod a NodeClaim was launched
// for stays on that claim in the next passes' snapshots while its launch
// has not settled (Joiner's decisions; see state.Store's
// SetPinLaunchedPods). Upstream Karpenter plans every pending pod again
// each pass, over the claims in flight.
func (p Policy) PinsLaunchedPods() bool { return !p.Karpenter() }

// OverlayMode is how NodeOverlays apply under the policy: upstream's merge
// (capacity from every matching overlay) when it makes upstream's choices,
// else the highest weight's alone.
func (p Policy) OverlayMode() overlay.Mode {
	if p.Karpenter() {
		return overlay.UpstreamMerge
	}
	return overlay.HighestWeight
}

// Notes say, for a report, what the policy changes from the default; none
// for the default.
func (p Policy) Notes() []string {
	var notes []string
	if p.MinValues == MinValuesBestEffort {
		notes = append(notes, "minValues policy BestEffort: a claim whose types cannot meet a NodePool's minValues has it lowered to what they allow")
	}
	if p.ModelDRA {
		notes = append(notes, "Dynamic Resource Allocation modelled (--ignore-dra-requests=false): pods' device claims are allocated from the DeviceClasses, claims and slices given, and a node not launched yet has its instance type's devices — for the catalog's GPU types, Joiner's templates (one device per GPU through gpu.nvidia.com or gpu.amd.com, with productName, index and memory; upstream's AWS provider has none)")
	}
	if p.Karpenter() {
		notes = append(notes, "decisions: karpenter — provisioning makes upstream Karpenter's choices (pods by cpu, then memory, then age; the open claim with the fewest pods first), to predict what Karpenter would do")
	}
	return notes
}
